"""Two real processes on localhost (4 CPU devices each, gloo collectives): the same losses as one
process on 8 devices, a SIGTERM seen by one process only stops both after the same step with one
checkpoint, and the restart resumes exactly."""

import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from ssl_jax import train
from tests.helpers import localhost_process_env, tiny_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOTAL, LOG_EVERY = 6, 2
TIMEOUT = 420  # seconds for one 2-process run; a hang fails the test instead of blocking CI


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _run_two_processes(workdir: str, sigterm_at: dict[int, int], **extra_env) -> list[str]:
    """Both processes of one run; returns their outputs. `sigterm_at`: process id → step."""
    port = _free_port()
    procs = []
    for pid in range(2):
        env = localhost_process_env(port, pid, **extra_env)
        args = [workdir, str(TOTAL), str(LOG_EVERY)]
        if pid in sigterm_at:
            args.append(str(sigterm_at[pid]))
        procs.append(
            subprocess.Popen(
                [sys.executable, "-m", "tests.multihost_worker", *args],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    outs = []
    try:
        for proc in procs:
            outs.append(proc.communicate(timeout=TIMEOUT)[0])
    except subprocess.TimeoutExpired:
        for proc in procs:
            proc.kill()
        outs = [proc.communicate()[0] for proc in procs]
        pytest.fail("a 2-process run hung:\n" + "\n----\n".join(outs))
    for proc, out in zip(procs, outs):
        assert proc.returncode == 0, out
    return outs


def _losses(workdir: str) -> dict[int, float]:
    from ssl_jax.output.writers import read_metrics

    return {r["step"]: r["train/loss"] for r in read_metrics(workdir) if "train/loss" in r}


@pytest.mark.slow
def test_two_processes_stop_together_and_resume_exactly(tmp_path):
    # the reference: this process, 8 devices
    config = tiny_config("mocov2")
    config.total_steps, config.log_every_steps = TOTAL, LOG_EVERY
    config.checkpoint_every_steps = 1000
    train.train_and_evaluate(config, str(tmp_path / "one"))
    reference = _losses(str(tmp_path / "one"))
    assert sorted(reference) == [2, 4, 6]

    # SIGTERM on process 1 only, right after step 3 (not a log step: its vote is read a step
    # later) → both processes save step 4 and exit
    workdir = str(tmp_path / "two")
    out0, out1 = _run_two_processes(workdir, sigterm_at={1: 3})
    assert "process 0/2: 8 devices" in out0 and "process 1/2: 8 devices" in out1
    assert "stopped: step 4 (a stop request on another process)" in out0, out0
    assert "stopped: step 4 (SIGTERM)" in out1, out1
    assert os.listdir(os.path.join(workdir, "checkpoints")) == ["4"]
    assert sorted(_losses(workdir)) == [2, 4]

    # restart both: resumes at step 4 and finishes with the reference's losses
    out0, out1 = _run_two_processes(workdir, sigterm_at={})
    for out in (out0, out1):
        assert "Resuming from the checkpoint at step 4" in out and "step 6/6" in out, out
        assert "stopped" not in out
    resumed = _losses(workdir)
    assert sorted(resumed) == [2, 4, 6]
    np.testing.assert_allclose(
        [resumed[s] for s in (2, 4, 6)], [reference[s] for s in (2, 4, 6)], rtol=2e-4
    )


@pytest.mark.slow
def test_two_processes_with_the_device_pipeline(tmp_path):
    """`data.pipeline='device'`: each process holds the split, computes the same permutation and
    feeds its 4 devices their positions of each global batch: the losses of one process on 8
    devices."""
    config = tiny_config("mocov2")
    config.data.pipeline = "device"
    config.total_steps, config.log_every_steps = TOTAL, LOG_EVERY
    config.checkpoint_every_steps = 1000
    train.train_and_evaluate(config, str(tmp_path / "one"))
    reference = _losses(str(tmp_path / "one"))
    workdir = str(tmp_path / "two")
    for out in _run_two_processes(workdir, sigterm_at={}, SSL_JAX_TEST_PIPELINE="device"):
        assert "in device memory" in out and "step 6/6" in out, out
    two = _losses(workdir)
    assert sorted(two) == sorted(reference) == [2, 4, 6]
    np.testing.assert_allclose(
        [two[s] for s in (2, 4, 6)], [reference[s] for s in (2, 4, 6)], rtol=2e-4
    )
