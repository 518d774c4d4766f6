#!/usr/bin/env bash
# TPU pod slice: run the same command on every worker; jax.distributed discovers the pod.
# Usage: launch/tpu_pod.sh TPU_NAME ZONE configs/scce_imagenet.py gs://bucket/workdir [--config.x=y ...]
set -euo pipefail
tpu=$1; zone=$2; config=$3; workdir=$4; shift 4
gcloud compute tpus tpu-vm ssh "$tpu" --zone="$zone" --worker=all --command \
  "cd ssl_jax && TF_CPP_MIN_LOG_LEVEL=2 SSL_JAX_COORDINATOR=tpu python -m ssl_jax.main --config=$config --workdir=$workdir $*"
