#!/usr/bin/env bash
# Two processes on this machine as two "hosts" (CPU, 4 devices each, gloo collectives): the multi-host
# code path (jax.distributed, per-process data shards, agreed stop, collective checkpoints) by hand.
# Usage: launch/local_2proc.sh configs/mocov2_fashion_mnist.py:runlocal /tmp/run2 [--config.x=y ...]
# Stop test: `kill -TERM <pid of one process>` (printed below): both save the same step and exit 0;
# rerun the same command to resume. Logs: WORKDIR/process_{0,1}.log.
set -euo pipefail
config=$1; workdir=$2; shift 2
mkdir -p "$workdir"
python=${PYTHON:-python}
port=${SSL_JAX_PORT:-$("$python" -c 'import socket; s = socket.socket(); s.bind(("localhost", 0)); print(s.getsockname()[1])')}
export TF_CPP_MIN_LOG_LEVEL=2 JAX_PLATFORMS=cpu XLA_FLAGS=--xla_force_host_platform_device_count=4
export SSL_JAX_COORDINATOR=localhost:$port SSL_JAX_NUM_PROCESSES=2
pids=()
for id in 0 1; do
  SSL_JAX_PROCESS_ID=$id "$python" -m ssl_jax.main --config="$config" --workdir="$workdir" "$@" \
    >"$workdir/process_$id.log" 2>&1 &
  pids+=($!)
  echo "process $id: pid $! (log $workdir/process_$id.log)"
done
trap 'kill -TERM "${pids[@]}" 2>/dev/null || true' INT TERM  # Ctrl-C: a clean stop of both
status=0
for pid in "${pids[@]}"; do
  rc=0; wait "$pid" || rc=$?
  while [ "$rc" -gt 128 ] && kill -0 "$pid" 2>/dev/null; do rc=0; wait "$pid" || rc=$?; done  # trap
  if [ "$rc" -ne 0 ]; then status=$rc; fi
done
tail -n 3 "$workdir/process_0.log"
exit $status
