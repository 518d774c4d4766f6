#!/usr/bin/env bash
# README command 1: set everything up on a fresh Debian/Ubuntu machine (Python >= 3.12) with
# launch/setup.sh, then run the default job (pretraining on Fashion-MNIST, then the linear-probe table).
# Usage: bash launch/default_job.sh [FASHION_MNIST_DIR] [--config.x=y ...]
#   FASHION_MNIST_DIR: a folder with the four IDX .gz files; default: Debian's dataset-fashion-mnist package.
set -euo pipefail
cd "$(dirname "$0")/.."
data_dir=""
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then data_dir=$1; shift; fi
bash launch/setup.sh ${data_dir:+"$data_dir"}
export TF_CPP_MIN_LOG_LEVEL=2
exec .venv/bin/python -m ssl_jax.main --config=configs/sce_fashion_mnist.py --workdir="${WORKDIR:-runs/default}" \
  ${data_dir:+--config.data.data_dir="$data_dir"} "$@"
