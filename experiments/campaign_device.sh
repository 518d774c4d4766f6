#!/usr/bin/env bash
# Advance a results-campaign grid on a lent accelerator machine whose image has JAX but neither
# TensorFlow nor ml_collections / clu, and whose files come back only from $OUT (8 files at most).
#
#   bash experiments/campaign_device.sh prepare          # here: .whl/ (ml_collections, clu),
#                                                        # .data/fashion_mnist/ (the IDX files)
#                                                        # and .data/COMMIT (the code's commit)
#   bash experiments/campaign_device.sh run gpu 9        # there, carrying .whl and .data: the next
#                                                        # cells of grid `gpu` that fit in 9 min
#   bash experiments/campaign_device.sh unpack DIR       # here: DIR/cells.tar -> results/<grid>/,
#                                                        # then the page
#
# One command may run 10 minutes there and a quarter hour of device time includes the machine's
# start: `run gpu 9` with a 600 s limit, then, if time is left, a second `run` with the minutes left
# less three. `run` starts from the grid's cells in results/ (the cells done are skipped, and
# the earlier cells on this device kind give the estimates) and rewrites $OUT/cells.tar (all the
# grid's cells) after each finished one, so a call stopped at its time limit still brings back
# every finished cell; $OUT/campaign.log is the whole output. Compilations are cached in /tmp for
# the call (a method's later seeds reuse them).
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
prepare)
  grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >>.git/info/exclude
  grep -qx '/.data/' .git/info/exclude 2>/dev/null || echo '/.data/' >>.git/info/exclude
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform any -d .whl "ml-collections>=1.1,<2" "clu>=0.0.12,<0.1"
  mkdir -p .data/fashion_mnist
  cp "${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"/*-ubyte.gz .data/fashion_mnist/
  # the tree travels without .git: the cells name the commit read here (run this just before)
  .venv/bin/python -c "from experiments import campaign_runner; print(campaign_runner.commit())" >.data/COMMIT
  echo "commit $(cat .data/COMMIT)"
  ls -la .whl .data/fashion_mnist
  ;;
run)
  grid="${2:?grid}" minutes="${3:?minutes}"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl
  # the tree is not installed there: the repository root on PYTHONPATH gives ssl_jax, configs, experiments
  export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
  SSL_JAX_COMMIT="$(cat .data/COMMIT 2>/dev/null || echo unknown)"
  export SSL_JAX_COMMIT
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
  mkdir -p /tmp/cells && cp -r results/. /tmp/cells/
  python3 experiments/campaign.py --grid="$grid" --minutes="$minutes" \
    --results-dir=/tmp/cells --archive="$OUT/cells.tar" --data-dir="$PWD/.data/fashion_mnist" \
    --compile-cache=/tmp/jax_cache 2>&1 | tee "$OUT/campaign.log"
  ;;
unpack)
  dir="${2:?folder holding cells.tar}"
  tar -xvf "$dir/cells.tar" -C results
  .venv/bin/python experiments/campaign.py --page=results/README.md
  ;;
*)
  sed -n '2,15p' "$0"
  exit 2
  ;;
esac
