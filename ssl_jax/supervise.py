"""The launchers' supervisor: the processes of one multi-host run stop together when one is lost, the
run ends with one line that says what happened, and, if asked, it restarts from its last checkpoint.

`python -m ssl_jax.supervise --workdir=DIR --resume='COMMAND TO RERUN' [--processes=N] -- COMMAND...`

- `--processes=N` (`launch/local_2proc.sh`): N copies of COMMAND on this machine as N hosts, each
  with `SSL_JAX_COORDINATOR=localhost:<a free port>` (`SSL_JAX_PORT`: that port),
  `SSL_JAX_NUM_PROCESSES` and `SSL_JAX_PROCESS_ID`, output to `DIR/process_<i>.log`. The first one
  to exit non-zero has the others killed at once (SIGKILL: a checkpoint is collective, so there is
  nothing they could still save), as `srun --kill-on-bad-exit` does;
- without it (`launch/slurm_gpu.sbatch`): COMMAND is one `srun --kill-on-bad-exit=1` step that runs
  every process with output to `DIR/process_<task>.log`; which one failed and how is read from srun's
  `task N: ...` message.

A lost process ends the run with one `error:` line: the process, how it ended (signal or exit status),
its log, the step of the newest complete checkpoint in DIR and the command that resumes (jax's own
abort messages stay in the processes' logs). `MAX_RESTARTS=N` in the environment (torchrun's
`--max-restarts`): instead, up to N times, the whole job is started again and resumes from that
checkpoint, each restart one line with its step; 0 (the default) restarts nothing. Exit status 2 of
a process (ssl_jax's user error: a bad config, missing data, a non-finite loss) is never restarted:
it would end the same way. SIGTERM/SIGINT to the supervisor reach the processes as SIGTERM (they
save the step they agree on and exit 0) and end the restarts.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import signal
import socket
import subprocess
import sys

USER_ERROR_STATUS = 2  # progress.user_error's exit status: the same input fails the same way again
LOG_NAME = "process_{}.log"
# srun's report of a task that ended badly: 'srun: error: node2: task 1: Killed',
# '... tasks 0-1: Exited with exit code 2'
SRUN_TASK = re.compile(r"srun: error: (\S+): tasks? ([0-9][0-9,\-]*): (.+)$")
SRUN_EXIT_CODE = re.compile(r"Exited with exit code (\d+)")


@dataclasses.dataclass(frozen=True)
class Failure:
    """The first process of an attempt that ended badly."""

    process: str  # 'process 1 (pid 4242)', 'task 1 on node2'
    how: str  # 'was killed by SIGKILL', 'exited with status 3'
    status: int | None  # as a shell reports it: the exit status, or 128 + the signal
    log: str | None


def describe_returncode(returncode: int) -> tuple[str, int]:
    """A `Popen.returncode` (negative: the signal) → (how it ended, the shell's exit status)."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}", 128 - returncode
    return f"exited with status {returncode}", returncode


def describe_srun(what: str) -> tuple[str, int | None]:
    """srun's words for how a task ended ('Killed': strsignal's name of SIGKILL, 'Exited with exit
    code 3') → (how it ended, the shell's exit status; None where the words do not say)."""
    code = SRUN_EXIT_CODE.fullmatch(what)
    if code:
        return f"exited with status {code.group(1)}", int(code.group(1))
    for sig in signal.Signals:
        if signal.strsignal(sig) == what:
            return f"was killed by {sig.name}", 128 + sig
    return f"ended: {what!r} (srun)", None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


class Supervisor:
    """Runs the attempts, forwards stop signals, restarts and reports (module docstring)."""

    def __init__(self, command, *, workdir, resume, processes, max_restarts):
        self.command, self.workdir, self.resume = command, workdir, resume
        self.processes, self.max_restarts = processes, max_restarts
        self.stopping = False  # a SIGTERM/SIGINT came: no restart
        self.children: list[subprocess.Popen] = []

    def install_signal_handlers(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            if signal.getsignal(sig) is not signal.SIG_IGN:  # ignored (nohup, `&`): stays so
                signal.signal(sig, self._forward_stop)

    def _forward_stop(self, signum, frame) -> None:
        self.stopping = True
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)

    def run(self) -> int:
        """The job's exit status: 0, or the failed process's after the last attempt."""
        restarts = 0
        while True:
            attempt = self._local_attempt if self.processes else self._step_attempt
            failure = attempt(append=restarts > 0)
            if failure is None:
                if self.processes:  # the run's last lines, as process 0 printed them
                    with open(self._log(0), errors="replace") as log:
                        print("".join(log.readlines()[-3:]), end="", flush=True)
                return 0
            step = newest_step(self.workdir)
            retry = failure.status != USER_ERROR_STATUS and not self.stopping
            if not retry or restarts == self.max_restarts:
                print(self.error_line(failure, step, restarts), file=sys.stderr, flush=True)
                return failure.status
            restarts += 1
            line = (
                f"restart {restarts}/{self.max_restarts}: {failure.process} {failure.how}; "
                f"the job starts again from {_where(step)}"
            )
            print(line, flush=True)
            if self.processes:
                for i in range(self.processes):
                    with open(self._log(i), "a") as log:
                        log.write(f"\n---- {line}\n\n")

    def error_line(self, failure: Failure, step: int | None, restarts: int) -> str:
        """The run's last line after a lost process (module docstring)."""
        said = _last_error_line(failure.log) if failure.status == USER_ERROR_STATUS else None
        log = f"log {failure.log}" + (f": {said!r}" if said else "")
        after = f" after {restarts} restart{'s' * (restarts != 1)}" if restarts else ""
        if step is None:
            kept = "no checkpoint was saved yet (the resume command starts from step 0)"
        else:
            kept = f"the last complete checkpoint is step {step} in {self.workdir}/checkpoints"
        resume = self.resume
        if self.max_restarts:
            resume = f"MAX_RESTARTS={self.max_restarts} {resume}"
        return f"error: {failure.process} {failure.how}{after} ({log}); {kept}; resume: {resume}"

    def _log(self, i: int) -> str:
        return os.path.join(self.workdir, LOG_NAME.format(i))

    def _local_attempt(self, *, append: bool) -> Failure | None:
        """All processes on this machine; the first bad exit kills the others."""
        port = os.environ.get("SSL_JAX_PORT") or str(free_port())
        self.children = []
        for i in range(self.processes):
            env = dict(
                os.environ,
                SSL_JAX_COORDINATOR=f"localhost:{port}",
                SSL_JAX_NUM_PROCESSES=str(self.processes),
                SSL_JAX_PROCESS_ID=str(i),
            )
            with open(self._log(i), "a" if append else "w") as log:
                child = subprocess.Popen(
                    self.command, env=env, stdout=log, stderr=subprocess.STDOUT
                )
            self.children.append(child)
            print(f"process {i}: pid {child.pid} (log {self._log(i)})", flush=True)
        failure = None
        while any(child.returncode is None for child in self.children):
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)  # until any child ends
            for i, child in enumerate(self.children):
                if child.returncode is not None or child.poll() is None or child.returncode == 0:
                    continue
                if failure is None:
                    how, status = describe_returncode(child.returncode)
                    failure = Failure(f"process {i} (pid {child.pid})", how, status, self._log(i))
                    if not self.stopping:  # stopping: the others are saving (--stop_exit_code)
                        self._kill_others(failure)
        return failure

    def _kill_others(self, failure: Failure) -> None:
        killed = [i for i, child in enumerate(self.children) if child.poll() is None]
        for i in killed:
            self.children[i].kill()
        for i in killed:
            self.children[i].wait()
            with open(self._log(i), "a") as log:
                log.write(f"\n---- killed by the launcher: {failure.process} {failure.how}\n")

    def _step_attempt(self, *, append: bool) -> Failure | None:
        """One srun step (it kills the other tasks itself); its messages are passed on and its
        first report of a failed task names the failure."""
        child = subprocess.Popen(self.command, stderr=subprocess.PIPE, text=True, errors="replace")
        self.children = [child]
        failure = None
        for line in child.stderr:
            sys.stderr.write(line)
            sys.stderr.flush()
            match = SRUN_TASK.search(line.strip())
            if match and failure is None:
                node, tasks, what = match.groups()
                first = int(re.match(r"\d+", tasks).group())
                name = f"task{'s' * (not tasks.isdigit())} {tasks} on {node}"
                failure = Failure(name, *describe_srun(what), self._log(first))
        child.wait()
        if child.returncode == 0:
            return None
        if failure is None:  # no task reported: srun itself failed
            return Failure("srun", *describe_returncode(child.returncode), None)
        if failure.status is None:  # srun's words did not say: its own exit status
            return dataclasses.replace(failure, status=describe_returncode(child.returncode)[1])
        return failure


def newest_step(workdir: str) -> int | None:
    from ssl_jax import checkpoint  # jax and orbax: only once a process has failed

    return checkpoint.newest_step(workdir)


def _where(step: int | None) -> str:
    return "step 0 (no checkpoint yet)" if step is None else f"the checkpoint at step {step}"


def _last_error_line(log: str | None) -> str | None:
    """The last `error: ...` line of a process's log (its own account of a user error)."""
    if not log or not os.path.exists(log):
        return None
    with open(log, errors="replace") as f:
        lines = [line.strip() for line in f if line.startswith("error: ")]
    return lines[-1][len("error: ") :] if lines else None


def max_restarts(environ) -> int:
    value = environ.get("MAX_RESTARTS", "").strip() or "0"
    if not value.isdigit():
        raise SystemExit(f"error: MAX_RESTARTS={value!r}: allowed a whole number ≥ 0 (default 0)")
    return int(value)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m ssl_jax.supervise", description=__doc__)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--resume", required=True, help="the command that resumes the run")
    parser.add_argument("--processes", type=int, default=0, help="N local processes (else a step)")
    parser.add_argument("command", nargs="+")
    args = parser.parse_args(argv)
    supervisor = Supervisor(
        args.command,
        workdir=args.workdir,
        resume=args.resume,
        processes=args.processes,
        max_restarts=max_restarts(os.environ),
    )
    supervisor.install_signal_handlers()
    return supervisor.run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
