#!/usr/bin/env bash
# Two processes on this machine as two "hosts" (CPU, 4 devices each, gloo collectives): the multi-host
# code path (jax.distributed, per-process data shards, agreed stop, collective checkpoints) by hand.
# Usage: [MAX_RESTARTS=N] launch/local_2proc.sh configs/mocov2_fashion_mnist.py:runlocal /tmp/run2 [--config.x=y ...]
# Stop test: `kill -TERM <pid of one process>` (printed below): both save the same step and exit 0;
# rerun the same command to resume. Lost-host test: `kill -KILL <pid>`: the other is killed at once
# and one `error:` line names the process, its signal, the last checkpoint's step and the command
# that resumes; MAX_RESTARTS=N restarts the job from that checkpoint up to N times (ssl_jax/supervise.py).
# Logs: WORKDIR/process_{0,1}.log (a restart appends). SSL_JAX_PORT: the coordinator's port (default: a
# free one); SSL_JAX_HEARTBEAT_S: jax's heartbeat timeout (ssl_jax/parallel/distributed.py).
set -euo pipefail
config=$1; workdir=$2; shift 2
mkdir -p "$workdir"
python=${PYTHON:-python}
export TF_CPP_MIN_LOG_LEVEL=2 JAX_PLATFORMS=cpu XLA_FLAGS=--xla_force_host_platform_device_count=4
resume=$(printf '%q ' "$0" "$config" "$workdir" "$@")
exec "$python" -m ssl_jax.supervise --processes=2 --workdir="$workdir" --resume="${resume% }" -- \
  "$python" -m ssl_jax.main --config="$config" --workdir="$workdir" "$@"
