#!/usr/bin/env bash
# Set up a fresh Debian/Ubuntu machine (Python >= 3.12) for ssl_jax: the README's command 1 runs it
# (through launch/default_job.sh), and so does CI (.ci/run), so the README's commands are what CI runs.
#   - Fashion-MNIST: Debian's dataset-fashion-mnist (apt, with sudo when not root), unless it is
#     installed or FASHION_MNIST_DIR is given;
#   - .venv on Python >= 3.12 (jax >= 0.11 is published for 3.12 and newer only): $PYTHON, else the
#     first of python3.12, python3.13, python3 that is new enough, else pyenv's newest 3.12 (Colab's
#     and the accelerator image's Python), else its 3.13;
#     a .venv left on an older Python is made again (said in one line);
#   - in it, requirements-dev.txt (requirements.txt + pytest + ruff + nbclient/ipykernel for
#     tests/test_colab.py, which executes colab/*.ipynb: the README's test command) and the package
#     itself (`pip install -e .`, so `import ssl_jax` works outside the repository);
#   - torch and torchvision as a pinned pair that imports together (torchvision's compiled ops are
#     built for one torch release: PyPI's torchvision beside another torch fails at import), for
#     the export's loading lines and parity tests; best effort: without them those tests skip.
#   - Detectron2 (the detection fine-tune, `python -m ssl_jax.detection`), built from source at a
#     pinned commit against that torch (CPU ops; it publishes no wheels for current torch) into a
#     wheel cached per commit, torch and Python, so that a second set-up installs it in seconds;
#     best effort like torch (one line when it fails), required where DETECTRON2_REQUIRED=1 (CI).
# Usage: bash launch/setup.sh [FASHION_MNIST_DIR]
#   FASHION_MNIST_DIR: a folder with the four IDX .gz files (then nothing is installed with apt).
# Environment: PYTHON (the interpreter for .venv), DETECTRON2_SOURCE (default the pinned git URL; or a local archive / folder of that
#   commit, e.g. the vendored detectron2-02b5c4e2.tar.gz), DETECTRON2_REQUIRED=1 (fail without it),
#   SSL_JAX_CACHE (where the built wheel is kept; default ~/.cache/ssl_jax).
set -euo pipefail
TORCH_VERSION=2.14.1 TORCHVISION_VERSION=0.29.1  # a pair: change both together
DETECTRON2_COMMIT=02b5c4e295e990042a714712c21dc79b731e8833  # facebookresearch/detectron2, 2026-06-06
cd "$(dirname "$0")/.."
data_dir=${1:-}
if [ -z "$data_dir" ] && [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist
fi
new_enough() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }
python=""
for candidate in ${PYTHON:-} python3.12 python3.13 python3; do
  if new_enough "$candidate"; then python=$candidate; break; fi
done
if [ -z "$python" ] && command -v pyenv >/dev/null; then
  # 3.12 first: the Python of Colab and of the accelerator image
  version=$(pyenv versions --bare | grep -E '^3\.12\.[0-9]+$' | sort -V | tail -n 1 || true)
  [ -z "$version" ] && version=$(pyenv versions --bare | grep -E '^3\.13\.[0-9]+$' | sort -V | tail -n 1 || true)
  [ -n "$version" ] && python="$(pyenv root)/versions/$version/bin/python3"
fi
if [ -z "$python" ]; then
  echo "error: ssl_jax needs Python >= 3.12 (jax >= 0.11 is published for 3.12 and newer); set PYTHON=/path/to/python3.12" >&2
  exit 1
fi
if [ -x .venv/bin/python ] && ! new_enough .venv/bin/python; then
  echo "setup: .venv is on $(.venv/bin/python --version 2>&1); making it again with $("$python" --version 2>&1)"
  rm -rf .venv
fi
if [ ! -x .venv/bin/python ]; then "$python" -m venv .venv; fi
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -r requirements-dev.txt
# the package itself, editable: `import ssl_jax` and `python -m ssl_jax.main` work from any folder
# (setuptools' notice that an editable install exists is not printed; errors are)
PYTHONWARNINGS=ignore .venv/bin/pip install -q --no-deps -e .
# (an extra index set in PIP_EXTRA_INDEX_URL, e.g. a CPU-only build of the same pair, is honoured)
.venv/bin/pip install -q "torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION" \
  || echo "torch $TORCH_VERSION + torchvision $TORCHVISION_VERSION not installable here: the export tests will be skipped"
# triton (torch.compile's GPU kernels, a dependency of torch's CUDA build) segfaults when it is
# imported into a process that loaded TensorFlow first, as torchvision does after ssl_jax; loading
# an exported encoder needs no triton
.venv/bin/pip uninstall -q -y triton 2>/dev/null || true
# Detectron2 from source, once: the cached wheel is keyed by its commit, the torch it was built
# against and the Python (its C++ ops link to that torch)
detectron2_source=${DETECTRON2_SOURCE:-git+https://github.com/facebookresearch/detectron2.git@$DETECTRON2_COMMIT}
bash launch/build_detectron2.sh .venv/bin/python "$detectron2_source" "${DETECTRON2_COMMIT:0:8}" \
  || { [ "${DETECTRON2_REQUIRED:-0}" = 1 ] && exit 1; true; }
