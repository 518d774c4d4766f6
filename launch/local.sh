#!/usr/bin/env bash
# Single host (CPU or GPUs): environment + ssl_jax.main, nothing else.
# Usage: launch/local.sh configs/sce_imagenet.py /path/to/workdir [--config.x=y ...]
set -euo pipefail
config=$1; workdir=$2; shift 2
export TF_CPP_MIN_LOG_LEVEL=2 XLA_PYTHON_CLIENT_MEM_FRACTION=${XLA_PYTHON_CLIENT_MEM_FRACTION:-0.9}
exec python -m ssl_jax.main --config="$config" --workdir="$workdir" "$@"
