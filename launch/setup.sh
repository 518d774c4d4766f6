#!/usr/bin/env bash
# Set up a fresh Debian/Ubuntu machine (Python >= 3.11) for ssl_jax: the README's command 1 runs it
# (through launch/default_job.sh), and so does CI (.ci/run), so the README's commands are what CI runs.
#   - Fashion-MNIST: Debian's dataset-fashion-mnist (apt, with sudo when not root), unless it is
#     installed or FASHION_MNIST_DIR is given;
#   - .venv with requirements-dev.txt (requirements.txt + pytest + ruff + nbclient/ipykernel for
#     tests/test_colab.py, which executes colab/*.ipynb: the README's test command) and the package
#     itself (`pip install -e .`, so `import ssl_jax` works outside the repository);
#   - torch==2.13.0 (CPU) for the export parity tests, best effort: without it they skip.
# Usage: bash launch/setup.sh [FASHION_MNIST_DIR]
#   FASHION_MNIST_DIR: a folder with the four IDX .gz files (then nothing is installed with apt).
set -euo pipefail
cd "$(dirname "$0")/.."
data_dir=${1:-}
if [ -z "$data_dir" ] && [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist
fi
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -r requirements-dev.txt
# the package itself, editable: `import ssl_jax` and `python -m ssl_jax.main` work from any folder
# (setuptools' notice that an editable install exists is not printed; errors are)
PYTHONWARNINGS=ignore .venv/bin/pip install -q --no-deps -e .
# the CPU build where pip finds one (an extra index set in PIP_EXTRA_INDEX_URL is honoured)
.venv/bin/pip install -q torch==2.13.0 \
  || echo "torch==2.13.0 not installable here: the export parity tests will be skipped"
