"""The launch scripts, run on localhost: `launch/slurm_gpu.sbatch` under a fake `srun` (two tasks as
two one-task nodes, SLURM's variables) and `launch/tpu_pod.sh` under a fake `gcloud` (two TPU VM
workers: `TPU_WORKER_ID`, `TPU_WORKER_HOSTNAMES`), both in `tests/fake_cluster/`. Each process must
print the `jax.distributed.initialize` call with the right coordinator, process count and id, and
the two processes (4 CPU devices each) must train the tiny config to one process's losses on 8.

The argument resolution itself (`ssl_jax/parallel/distributed.py`) is checked on fake environments first.
"""

import os
import random
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from ssl_jax.parallel import distributed
from tests.process_env import multi_process_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKES = os.path.join(ROOT, "tests", "fake_cluster")
CONFIG = "tests/tiny_run_config.py"
TOTAL = 6  # as tests/test_multihost.py: the reference step compiles once (persistent cache)
TIMEOUT = 420  # seconds for one 2-process run; a hang fails the test instead of blocking CI


# --------------------------------------------------------------------------------------------------
# argument resolution on fake environments


@pytest.mark.parametrize(
    ("nodelist", "hosts"),
    [
        ("node001", ["node001"]),
        ("a,b", ["a", "b"]),
        ("gpu[01-03,07],login1", ["gpu01", "gpu02", "gpu03", "gpu07", "login1"]),
        ("r[1-2]n[08-09]", ["r1n08", "r1n09", "r2n08", "r2n09"]),
        ("node[8-10]", ["node8", "node9", "node10"]),
    ],
)
def test_expand_hostlist(nodelist, hosts):
    assert distributed.expand_hostlist(nodelist) == hosts


def _slurm_env(**extra):
    env = dict(
        SSL_JAX_COORDINATOR="slurm",
        SLURM_JOB_ID="1234",
        SLURM_NTASKS="4",
        SLURM_PROCID="3",
        SLURM_LOCALID="0",
        SLURM_STEP_NODELIST="gpu[07-10]",
        SLURM_STEP_NUM_NODES="4",
    )
    env.update(extra)
    return env


def test_resolve_slurm_one_task_per_node_sees_all_gpus():
    args = distributed.resolve(_slurm_env())
    # jax's port rule (61440 + job id mod 4096); local_device_ids None: all the node's GPUs (jax's
    # own SLURM detection would restrict each process to GPU SLURM_LOCALID = 0)
    assert args == distributed.DistributedArgs("gpu07:62674", 4, 3, None, "slurm")


def test_resolve_slurm_several_tasks_per_node_one_gpu_each():
    env = _slurm_env(SLURM_STEP_NUM_NODES="2", SLURM_LOCALID="1", SSL_JAX_COORDINATOR_PORT="999")
    assert distributed.resolve(env) == distributed.DistributedArgs("gpu07:999", 4, 3, (1,), "slurm")


def test_resolve_slurm_job_nodelist_and_scontrol_fallback(tmp_path, monkeypatch):
    env = _slurm_env(SLURM_JOB_NODELIST="n[1-4]")
    del env["SLURM_STEP_NODELIST"]
    assert distributed.resolve(env).coordinator_address == "n1:62674"
    # a list the parser does not know goes to `scontrol show hostnames` (a fake one here)
    scontrol = tmp_path / "scontrol"
    scontrol.write_text('#!/bin/sh\n[ "$1 $2" = "show hostnames" ] && echo head7 && echo head8\n')
    scontrol.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    env["SLURM_JOB_NODELIST"] = "head[7-8x]"
    assert distributed.resolve(env).coordinator_address == "head7:62674"


def test_resolve_tpu_host_port_and_errors():
    env = dict(SSL_JAX_COORDINATOR="tpu", TPU_WORKER_ID="1", TPU_WORKER_HOSTNAMES="t0,t1,t2,t3")
    assert distributed.resolve(env) == distributed.DistributedArgs("t0:8482", 4, 1, None, "tpu env")
    assert distributed.resolve({"SSL_JAX_COORDINATOR": "tpu"}) == distributed.AUTO  # metadata
    assert distributed.resolve({}) is None
    env = dict(SSL_JAX_COORDINATOR="h:1", SSL_JAX_NUM_PROCESSES="2", SSL_JAX_PROCESS_ID="1")
    assert distributed.resolve(env) == distributed.DistributedArgs("h:1", 2, 1)
    with pytest.raises(SystemExit, match="SSL_JAX_PROCESS_ID"):
        distributed.resolve({"SSL_JAX_COORDINATOR": "h:1", "SSL_JAX_NUM_PROCESSES": "2"})
    with pytest.raises(SystemExit, match="SLURM_PROCID"):
        distributed.resolve({"SSL_JAX_COORDINATOR": "slurm", "SLURM_NTASKS": "2"})


# --------------------------------------------------------------------------------------------------
# the scripts, two processes on localhost


def _free_port(lo: int = 1024, hi: int = 65535) -> int:
    for _ in range(200):
        port = random.randint(lo, hi)
        with socket.socket() as s:
            try:
                s.bind(("localhost", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port")


def _cluster_env(tmp_path, logs):
    """PATH with the fakes and a `python` that is this interpreter; CPU, 4 devices per process."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (bin_dir / "python").chmod(0o755)
    return multi_process_env(
        4,
        PATH=f"{FAKES}:{bin_dir}:{os.environ['PATH']}",
        FAKE_CLUSTER_LOGS=str(logs),
        JAX_PLATFORMS="cpu",
        TF_CPP_MIN_LOG_LEVEL="2",
    )


def _run_slurm(tmp_path, workdir, *extra_env):
    """`bash launch/slurm_gpu.sbatch` as SLURM runs it on a 2-node job; the port from the job id."""
    logs = tmp_path / "slurm_logs"
    logs.mkdir()
    port = _free_port(61440, 65535)
    env = _cluster_env(tmp_path, logs)
    env.update(
        SLURM_JOB_ID=str(port - 61440),
        SLURM_NTASKS="2",
        SLURM_NNODES="2",
        SLURM_JOB_NUM_NODES="2",
        SLURM_STEP_NUM_NODES="2",
        SLURM_JOB_NODELIST="localhost,127.0.0.1",
        SLURM_STEP_NODELIST="localhost,127.0.0.1",
    )
    env.update(extra_env)
    cmd = ["bash", "launch/slurm_gpu.sbatch", CONFIG, workdir, f"--config.total_steps={TOTAL}"]
    _run(cmd, env, workdir)
    # the sbatch script sends each task's output to WORKDIR/process_<task>.log (srun --output)
    outs = [open(os.path.join(workdir, f"process_{i}.log")).read() for i in range(2)]
    return port, outs


def _run_tpu(tmp_path, workdir, *extra_env):
    """`bash launch/tpu_pod.sh` with a fake gcloud: two workers whose home holds the clone."""
    logs = tmp_path / "tpu_logs"
    logs.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    os.symlink(ROOT, home / "ssl_jax")
    port = _free_port()
    env = _cluster_env(tmp_path, logs)
    # the port: the workers would use jax's 8482; a free one here (tests share the machine)
    env.update(FAKE_TPU_WORKERS="2", FAKE_TPU_HOME=str(home), SSL_JAX_COORDINATOR_PORT=str(port))
    env.update(extra_env)
    cmd = ["bash", "launch/tpu_pod.sh", "my-pod", "us-central2-b", CONFIG, workdir]
    _run([*cmd, f"--config.total_steps={TOTAL}"], env)
    args = (logs / "gcloud_args").read_text().split("\n")
    assert args[:7] == [
        "compute",
        "tpus",
        "tpu-vm",
        "ssh",
        "my-pod",
        "--zone=us-central2-b",
        "--worker=all",
    ]
    outs = [(logs / f"worker_{i}.log").read_text() for i in range(2)]
    return port, outs


def _run(cmd, env, workdir=""):
    try:
        proc = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{cmd[1]} hung: {e.stdout}{e.stderr}")
    logs = [env["FAKE_CLUSTER_LOGS"], workdir]  # the fakes' logs and the workdir's
    task_logs = "\n----\n".join(
        open(os.path.join(d, f)).read()
        for d in logs
        if os.path.isdir(d)
        for f in sorted(os.listdir(d))
        if f.endswith(".log")
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr + task_logs


def _calls(port, outs, host="localhost", local=None):
    for pid, out in enumerate(outs):
        call = (
            f"jax.distributed.initialize(coordinator_address='{host}:{port}', num_processes=2, "
            f"process_id={pid}, local_device_ids={local}, "
            f"heartbeat_timeout_seconds={distributed.DEFAULT_HEARTBEAT_S})"
        )
        assert call in out, out


@pytest.mark.parametrize("launcher", ["slurm", "tpu"])
def test_launcher_dry_run_prints_the_initialize_call(tmp_path, launcher):
    run = _run_slurm if launcher == "slurm" else _run_tpu
    port, outs = run(tmp_path, str(tmp_path / "run"), ("SSL_JAX_DISTRIBUTED_DRY_RUN", "1"))
    _calls(port, outs)


def _losses(workdir: str) -> dict[int, float]:
    from ssl_jax.output.writers import read_metrics

    return {r["step"]: r["train/loss"] for r in read_metrics(workdir) if "train/loss" in r}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The tiny run's losses in this process on 8 devices."""
    from ssl_jax import train
    from tests.tiny_run_config import get_config

    config = get_config()
    config.total_steps = TOTAL
    workdir = str(tmp_path_factory.mktemp("one_process"))
    train.train_and_evaluate(config, workdir)
    return _losses(workdir)


@pytest.mark.slow
# SLURM only: both launchers end in the same `python -m ssl_jax.main` per process, and what differs
# (the initialize call each resolves) is checked by the dry runs above; a second 2-process training
# run would cost ~75 s of the suite's budget for no new path.
@pytest.mark.parametrize("launcher", ["slurm"])
def test_launcher_trains_two_processes_to_one_process_losses(tmp_path, reference, launcher):
    run = _run_slurm if launcher == "slurm" else _run_tpu
    workdir = str(tmp_path / "run")
    port, outs = run(tmp_path, workdir)
    _calls(port, outs)
    for out in outs:
        assert f"step {TOTAL}/{TOTAL}" in out, out
    losses = _losses(workdir)
    assert sorted(losses) == sorted(reference) == list(range(1, TOTAL + 1))
    np.testing.assert_allclose(
        [losses[s] for s in sorted(losses)], [reference[s] for s in sorted(reference)], rtol=2e-4
    )


def test_the_set_up_installs_the_package_so_it_imports_from_any_folder(tmp_path):
    """launch/setup.sh installs ssl_jax (editable): `import ssl_jax` outside the repository."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", "import ssl_jax.configs, ssl_jax; print(ssl_jax.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == os.path.join(ROOT, "ssl_jax", "__init__.py")


@pytest.mark.slow
def test_a_process_killed_mid_run_restarts_and_the_job_ends_with_the_uninterrupted_losses(
    tmp_path, reference
):
    """`MAX_RESTARTS=1 launch/local_2proc.sh`, process 1 SIGKILLed right after dispatching step 4
    (`tests/sigkill_main.py`, once): the launcher kills process 0 at once, starts both again from the
    checkpoint at step 2 or 4 and the run ends with a loss at every step equal to the uninterrupted
    run's (one process on 8 devices, which the 2-process run equals: the test above)."""
    env = _cluster_env(tmp_path, tmp_path)
    python = tmp_path / "bin" / "python"  # `-m ssl_jax.main` → the same main, armed to SIGKILL
    python.write_text(
        '#!/bin/sh\n[ "$1 $2" = "-m ssl_jax.main" ] && shift 2 && '
        f'exec {sys.executable} -m tests.sigkill_main "$@"\nexec {sys.executable} "$@"\n'
    )
    mark = tmp_path / "killed_at"
    env.update(
        PYTHONPATH=ROOT,
        MAX_RESTARTS="1",
        SSL_JAX_TEST_SIGKILL="1:4",
        SSL_JAX_TEST_SIGKILL_ONCE=str(mark),
    )
    env.pop("XLA_FLAGS")  # the launcher sets 4 devices a process
    workdir = str(tmp_path / "run")
    cmd = ["bash", "launch/local_2proc.sh", CONFIG, workdir]
    extra = [f"--config.total_steps={TOTAL}", "--config.checkpoint_every_steps=2"]
    launcher = subprocess.Popen(
        [*cmd, *extra], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    watchdog = threading.Timer(2 * TIMEOUT, launcher.kill)  # a hang fails instead of blocking CI
    watchdog.start()
    restart_seen = None
    for line in launcher.stdout:
        if line.startswith("restart 1/1") and restart_seen is None:
            restart_seen = time.time()
            restart_line = line.strip()
    out_err = launcher.communicate(timeout=TIMEOUT)[1]
    watchdog.cancel()
    log = open(os.path.join(workdir, "process_1.log")).read()
    assert launcher.returncode == 0, out_err + log
    assert restart_seen is not None, out_err + log
    stop_s = restart_seen - float(mark.read_text())
    print(f"kill -KILL of process 1 → the job restarting: {stop_s:.1f} s")
    assert stop_s < 10, stop_s  # the launcher saw the exit; no heartbeat timeout waited for
    assert restart_line.startswith("restart 1/1: process 1 (pid ")
    assert (
        "was killed by SIGKILL; the job starts again from the checkpoint at step " in restart_line
    )
    log0 = open(os.path.join(workdir, "process_0.log")).read()
    assert "killed by the launcher: process 1" in log0 and f"step {TOTAL}/{TOTAL}" in log0, log0
    losses = _losses(workdir)  # the later record of a step repeated after the restart wins
    assert sorted(losses) == sorted(reference) == list(range(1, TOTAL + 1))
    np.testing.assert_allclose(
        [losses[s] for s in sorted(losses)], [reference[s] for s in sorted(reference)], rtol=2e-4
    )
