"""`python -m tests.sigkill_main [ssl_jax.main's arguments]`: `python -m ssl_jax.main`, except that the
process `SSL_JAX_TEST_SIGKILL=PROCESS_ID:STEP` names sends itself SIGKILL, a host lost without
warning: STEP 0 right after `jax.distributed.initialize` (a process lost during start-up), else right
after dispatching step STEP. With `SSL_JAX_TEST_SIGKILL_ONCE=PATH` only while PATH does not exist (it
is written first, holding the time of the kill): the restarted job runs through. Used by
tests/test_launch.py and tests/test_lost_host.py (run from the repository root).
"""

import os
import runpy
import signal
import sys
import time


def _kill_now() -> None:
    once = os.environ.get("SSL_JAX_TEST_SIGKILL_ONCE")
    if once:
        if os.path.exists(once):
            return
        with open(once, "w") as f:
            f.write(f"{time.time()}\n")
    os.kill(os.getpid(), signal.SIGKILL)


def _arm(step: int) -> None:
    from ssl_jax import run_control
    from ssl_jax.parallel import distributed

    if step == 0:
        initialize = distributed.initialize

        def initialize_then_die(environ):
            initialize(environ)
            _kill_now()

        distributed.initialize = initialize_then_die
        return
    poll, polls = run_control.StopVote.poll, []

    def poll_and_die(self, *, sync):
        polls.append(sync)
        if len(polls) == step:
            _kill_now()
        return poll(self, sync=sync)

    run_control.StopVote.poll = poll_and_die


if __name__ == "__main__":
    process, step = os.environ["SSL_JAX_TEST_SIGKILL"].split(":")
    if os.environ.get("SSL_JAX_PROCESS_ID") == process:
        _arm(int(step))
    sys.argv = ["ssl_jax.main", *sys.argv[1:]]
    runpy.run_module("ssl_jax.main", run_name="__main__", alter_sys=True)
