"""A host lost without warning (SIGKILL), on localhost: the launchers (`launch/local_2proc.sh`,
`launch/slurm_gpu.sbatch` under the fake srun) stop the other processes at once, end with one
`error:` line (process, signal or status, log, last complete checkpoint step, resume command) and,
with MAX_RESTARTS, start the job again (`ssl_jax/supervise.py`). These run a fake `ssl_jax.main` (a
shell script behind a `python` wrapper): seconds, no jax. jax's own fate sharing (the heartbeat
timeout, `SSL_JAX_HEARTBEAT_S`) is checked with two real processes; the restarted real run's losses
in tests/test_launch.py.
"""

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from ssl_jax.parallel import distributed
from tests.helpers import localhost_process_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAKES = os.path.join(ROOT, "tests", "fake_cluster")
TIMEOUT = 60  # seconds for one fake launch; the surviving fake process sleeps longer (300 s)
HEARTBEAT_S = 5  # the real processes' SSL_JAX_HEARTBEAT_S
HEARTBEAT_MARGIN_S = 15  # jax's detection and abort after the timeout, on a busy 2-core machine


def _fake_main(tmp_path, body: str) -> dict:
    """The environment for a launcher whose `python -m ssl_jax.main` is the shell script `body`
    ($ID: the process id, $MARK: a file for 'once'), other `python` calls this interpreter."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    main = bin_dir / "fake_main"
    main.write_text(
        '#!/bin/sh\nID=${SSL_JAX_PROCESS_ID:-$SLURM_PROCID}\nMARK="$FAKE_MARK"\n'
        'echo "fake main $ID"\n' + body
    )
    main.chmod(0o755)
    python = bin_dir / "python"
    python.write_text(
        f'#!/bin/sh\n[ "$1 $2" = "-m ssl_jax.main" ] && exec {main}\nexec {sys.executable} "$@"\n'
    )
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "MAX_RESTARTS"}
    env.update(PYTHON=str(python), FAKE_MARK=str(tmp_path / "mark"), FAKE_SRUN_KILL_WAIT="1")
    env.update(PATH=f"{FAKES}:{os.environ['PATH']}", FAKE_CLUSTER_LOGS=str(tmp_path))
    return env


def _workdir(tmp_path, *steps, in_flight=None) -> str:
    """A workdir with complete checkpoints `steps` and one save `in_flight` (orbax's temporary
    folder: not complete)."""
    workdir = tmp_path / "run"
    for step in steps:
        (workdir / "checkpoints" / str(step) / "default").mkdir(parents=True)
    if in_flight is not None:
        (workdir / "checkpoints" / f"{in_flight}.orbax-checkpoint-tmp-1").mkdir(parents=True)
    workdir.mkdir(exist_ok=True)
    return str(workdir)


def _launch(cmd, env, **popen) -> tuple[int, str, str, float]:
    start = time.time()
    try:
        done = subprocess.run(
            cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT, **popen
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the launcher did not stop the other process: {e.stdout}{e.stderr}")
    return done.returncode, done.stdout, done.stderr, time.time() - start


# process 1 dies by SIGKILL the first time, once process 0 has written its first line (else the
# launcher may kill process 0 before it wrote anything and its log has no 'fake main 0')
DIE_ONCE = (
    'if [ "$ID" = 0 ]; then touch "$MARK.up"; fi\n'
    'if [ "$ID" = 1 ] && [ ! -e "$MARK" ]; then\n'
    '  while [ ! -e "$MARK.up" ]; do sleep 0.05; done; touch "$MARK"; kill -KILL $$\n'
    "fi\n"
)


def test_a_killed_process_stops_the_other_at_once_with_one_error_line(tmp_path):
    # process 1 dies by SIGKILL while saving step 40; process 0 would go on for 300 s
    env = _fake_main(tmp_path, DIE_ONCE + "exec sleep 300\n")
    workdir = _workdir(tmp_path, 20, in_flight=40)
    cmd = ["bash", "launch/local_2proc.sh", "cfg.py", workdir, "--config.x=a b"]
    rc, out, err, seconds = _launch(cmd, env)
    assert rc == 128 + signal.SIGKILL, out + err
    assert seconds < 20, f"{seconds:.1f} s"  # not 300: process 0 was killed, not waited for
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    pid = out.splitlines()[1].split("pid ")[1].split()[0]  # 'process 1: pid N (log ...)'
    assert lines[0] == (
        f"error: process 1 (pid {pid}) was killed by SIGKILL (log {workdir}/process_1.log); "
        f"the last complete checkpoint is step 20 in {workdir}/checkpoints; "
        f"resume: launch/local_2proc.sh cfg.py {workdir} --config.x=a\\ b"
    )
    log0 = open(os.path.join(workdir, "process_0.log")).read()
    assert "fake main 0" in log0 and "killed by the launcher: process 1" in log0


def test_max_restarts_starts_the_job_again_from_the_last_checkpoint(tmp_path):
    env = _fake_main(tmp_path, DIE_ONCE + 'echo "done $ID"\n')
    env["MAX_RESTARTS"] = "2"
    workdir = _workdir(tmp_path, 2, 4)
    rc, out, err, _ = _launch(["bash", "launch/local_2proc.sh", "cfg.py", workdir], env)
    assert rc == 0, out + err
    restarts = [line for line in out.splitlines() if line.startswith("restart")]
    assert len(restarts) == 1 and restarts[0].startswith("restart 1/2: process 1 (pid "), out
    assert restarts[0].endswith(
        "was killed by SIGKILL; the job starts again from the checkpoint at step 4"
    )
    for pid in (0, 1):  # the logs keep both attempts
        log = open(os.path.join(workdir, f"process_{pid}.log")).read()
        assert log.count(f"fake main {pid}") == 2 and log.count(restarts[0]) == 1, log
        assert log.rstrip().endswith(f"done {pid}")


def test_restarts_used_up_and_a_user_error_are_one_error_line(tmp_path):
    # a process that dies every time: MAX_RESTARTS restarts, then the error line
    env = _fake_main(tmp_path, '[ "$ID" = 0 ] && exit 3\nexec sleep 300\n')
    env["MAX_RESTARTS"] = "2"
    workdir = _workdir(tmp_path)
    rc, out, err, _ = _launch(["bash", "launch/local_2proc.sh", "cfg.py", workdir], env)
    assert rc == 3 and out.count("\nrestart ") == 2, out + err
    assert "restart 2/2: process 0" in out and "from step 0 (no checkpoint yet)" in out
    assert err.strip().startswith("error: process 0 (pid ")
    assert err.strip().endswith(
        f"exited with status 3 after 2 restarts (log {workdir}/process_0.log); no checkpoint was "
        f"saved yet (the resume command starts from step 0); "
        f"resume: MAX_RESTARTS=2 launch/local_2proc.sh cfg.py {workdir}"
    )
    # exit status 2 (ssl_jax's user error) would fail the same way again: no restart, its line
    env = _fake_main(tmp_path / "user", 'echo "error: --config.x: no such key" >&2\nexit 2\n')
    env["MAX_RESTARTS"] = "2"
    rc, out, err, _ = _launch(["bash", "launch/local_2proc.sh", "cfg.py", workdir], env)
    assert rc == 2 and "\nrestart " not in out, out + err
    assert "exited with status 2 (log " in err and "'--config.x: no such key')" in err, err


def test_a_stop_request_is_passed_on_and_not_restarted(tmp_path):
    env = _fake_main(
        tmp_path, "trap 'echo stopping; kill $!; exit 143' TERM\necho ready\nsleep 300 & wait\n"
    )
    env["MAX_RESTARTS"] = "1"
    workdir = _workdir(tmp_path, 2)
    cmd = ["bash", "launch/local_2proc.sh", "cfg.py", workdir]
    launcher = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    logs = [os.path.join(workdir, f"process_{i}.log") for i in (0, 1)]
    deadline = time.time() + TIMEOUT
    while not all(os.path.exists(p) and "ready" in open(p).read() for p in logs):
        assert time.time() < deadline and launcher.poll() is None
        time.sleep(0.1)
    launcher.send_signal(signal.SIGTERM)
    out = launcher.communicate(timeout=TIMEOUT)[0]
    assert launcher.returncode == 143 and "\nrestart " not in out, out
    assert all("stopping" in open(p).read() for p in logs)


def test_slurm_restarts_in_a_new_srun_step_and_names_the_task(tmp_path):
    env = _fake_main(tmp_path, DIE_ONCE + 'echo "done $ID"\n')
    env.update(MAX_RESTARTS="1", SLURM_NTASKS="2", SLURM_JOB_ID="1", SLURM_NNODES="2")
    workdir = _workdir(tmp_path, 6)
    cmd = ["bash", "launch/slurm_gpu.sbatch", "cfg.py", workdir, "--config.y=1"]
    rc, out, err, _ = _launch(cmd, env)
    assert rc == 0, out + err
    assert out.strip() == (
        "restart 1/1: task 1 on localhost was killed by SIGKILL; "
        "the job starts again from the checkpoint at step 6"
    )
    assert "srun: error: localhost: task 1: Killed" in err  # srun's messages are passed on
    log1 = open(os.path.join(workdir, "process_1.log")).read()  # srun --output, appended
    assert log1.count("fake main 1") == 2 and log1.rstrip().endswith("done 1"), log1
    # without restarts: the error line, with the sbatch command that resumes
    os.remove(tmp_path / "mark")
    env["MAX_RESTARTS"] = "0"
    rc, out, err, _ = _launch(cmd, env)
    assert rc == 128 + signal.SIGKILL, out + err
    assert err.strip().splitlines()[-1] == (
        f"error: task 1 on localhost was killed by SIGKILL (log {workdir}/process_1.log); "
        f"the last complete checkpoint is step 6 in {workdir}/checkpoints; "
        f"resume: sbatch launch/slurm_gpu.sbatch cfg.py {workdir} --config.y=1"
    )


def test_heartbeat_setting_and_bad_values():
    assert distributed.heartbeat_seconds({"SSL_JAX_HEARTBEAT_S": "7"}) == 7
    env = dict(SSL_JAX_COORDINATOR="h:1", SSL_JAX_NUM_PROCESSES="2", SSL_JAX_PROCESS_ID="0")
    args = distributed.resolve(dict(env, SSL_JAX_HEARTBEAT_S="7"))
    assert args.heartbeat_timeout_seconds == 7 and "heartbeat_timeout_seconds=7)" in args.call()
    assert distributed.resolve(env).heartbeat_timeout_seconds == distributed.DEFAULT_HEARTBEAT_S
    for bad in ("0", "-3", "1.5", "soon"):
        with pytest.raises(SystemExit, match=f"error: SSL_JAX_HEARTBEAT_S='{bad}'"):
            distributed.resolve(dict(env, SSL_JAX_HEARTBEAT_S=bad))


def test_dry_run_prints_the_heartbeat_for_jax_detection_too(capsys):
    env = dict(SSL_JAX_COORDINATOR="auto", SSL_JAX_HEARTBEAT_S="9", SSL_JAX_DISTRIBUTED_DRY_RUN="1")
    with pytest.raises(SystemExit) as stop:
        distributed.initialize(env)
    assert stop.value.code == 0
    assert capsys.readouterr().out == (
        "jax.distributed.initialize(heartbeat_timeout_seconds=9)  # jax's cluster detection\n"
    )


@pytest.mark.slow
def test_without_a_launcher_jax_ends_the_survivor_within_the_heartbeat_timeout(tmp_path):
    """Two real processes started by hand (no launcher to see the exit), process 1 SIGKILLed right
    after `jax.distributed.initialize`: jax's coordination service misses its heartbeats and aborts
    process 0 within `SSL_JAX_HEARTBEAT_S` plus a margin (fate sharing), instead of it waiting in
    its first collective for ever."""
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    mark = tmp_path / "killed_at"
    procs = []
    for pid in range(2):
        env = localhost_process_env(
            port,
            pid,
            SSL_JAX_HEARTBEAT_S=str(HEARTBEAT_S),
            SSL_JAX_TEST_SIGKILL="1:0",
            SSL_JAX_TEST_SIGKILL_ONCE=str(mark),
        )
        cmd = [sys.executable, "-m", "tests.sigkill_main", "--config=tests/tiny_run_config.py"]
        cmd += [f"--workdir={tmp_path / 'run'}", "--config.total_steps=1000"]
        log = open(tmp_path / f"process_{pid}.log", "w")
        procs.append(subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))
    try:
        procs[1].wait(timeout=240)
        rc = procs[0].wait(timeout=HEARTBEAT_S + HEARTBEAT_MARGIN_S + 60)
    except subprocess.TimeoutExpired:
        for proc in procs:
            proc.kill()
        pytest.fail("process 0 outlived its peer: " + (tmp_path / "process_0.log").read_text())
    ended = time.time()
    seconds = ended - float(mark.read_text())
    log0 = (tmp_path / "process_0.log").read_text()
    print(f"kill -KILL of process 1 → process 0 ended by jax: {seconds:.1f} s (status {rc})")
    assert procs[1].returncode == -signal.SIGKILL
    assert f"heartbeat_timeout_seconds={HEARTBEAT_S})" in log0, log0
    # jax's fate sharing aborts it (SIGABRT, "stopped sending heartbeats" in its log when the abort
    # message gets out; under load in CI once only the first lines did): either way it must end
    assert rc != 0, log0
    assert seconds < HEARTBEAT_S + HEARTBEAT_MARGIN_S, f"{seconds:.1f} s\n{log0}"
