#!/usr/bin/env bash
# TPU pod slice: the same command on every worker (gcloud ... --worker=all); each process resolves
# jax.distributed.initialize's arguments (ssl_jax/parallel/distributed.py: TPU_WORKER_HOSTNAMES / TPU_WORKER_ID
# where set, else jax's detection from the TPU VM's metadata) and prints the call.
# Tested on localhost with a fake gcloud: tests/test_launch.py.
# Usage: launch/tpu_pod.sh TPU_NAME ZONE configs/sce_imagenet.py gs://bucket/workdir [--config.x=y ...]
#   SSL_JAX_REMOTE_DIR: the clone on the workers, relative to the home folder (default: ssl_jax).
set -euo pipefail
tpu=$1; zone=$2; config=$3; workdir=$4; shift 4
gcloud compute tpus tpu-vm ssh "$tpu" --zone="$zone" --worker=all --command \
  "cd ${SSL_JAX_REMOTE_DIR:-ssl_jax} && TF_CPP_MIN_LOG_LEVEL=2 SSL_JAX_COORDINATOR=tpu python -m ssl_jax.main --config=$config --workdir=$workdir $*"
