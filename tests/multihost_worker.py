"""One process of a multi-process CPU pretraining run on localhost, launched by tests/test_multihost.py.

`python -m tests.multihost_worker WORKDIR TOTAL_STEPS LOG_EVERY [SIGTERM_AT_STEP]` with the
environment `main.py` reads (`SSL_JAX_COORDINATOR=localhost:PORT`, `SSL_JAX_NUM_PROCESSES`,
`SSL_JAX_PROCESS_ID`), `JAX_PLATFORMS=cpu` and `XLA_FLAGS` (4 devices).
Runs `tests.helpers.tiny_config('mocov2')`; each process reads its own rows of every global batch
(`SSL_JAX_TEST_PIPELINE=device`: with the device pipeline, each process feeds its devices its own
positions of the shared permutation).
With SIGTERM_AT_STEP, the process sends itself SIGTERM right after dispatching that step (a signal
only one process sees when only one is given the argument). Exit 0 after a completed run or a stop.
"""

import os
import signal
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(argv: list[str]) -> int:
    workdir, total, log_every = argv[0], int(argv[1]), int(argv[2])
    sigterm_at = int(argv[3]) if len(argv) > 3 else None
    import jax

    from ssl_jax.parallel import distributed

    distributed.initialize(os.environ)
    # as tests/conftest.py: the same random bits on any device count. No persistent compilation
    # cache: an executable of a cross-process computation loaded from it hangs the gloo collectives.
    jax.config.update("jax_threefry_partitionable", True)

    from ssl_jax import run_control, train
    from tests.helpers import tiny_config

    config = tiny_config("mocov2")
    config.total_steps = total
    config.log_every_steps = log_every
    config.checkpoint_every_steps = 1000
    config.data.pipeline = os.environ.get("SSL_JAX_TEST_PIPELINE", config.data.pipeline)
    if sigterm_at is not None:
        poll, polls = run_control.StopVote.poll, []

        def poll_with_sigterm(self, *, sync):
            polls.append(sync)
            if len(polls) == sigterm_at:
                os.kill(os.getpid(), signal.SIGTERM)
            return poll(self, sync=sync)

        run_control.StopVote.poll = poll_with_sigterm
    print(f"process {jax.process_index()}/{jax.process_count()}: {jax.device_count()} devices")
    try:
        train.train_and_evaluate(config, workdir)
    except run_control.StopRequested as stop:
        print(f"stopped: step {stop.step} ({stop.reason})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
