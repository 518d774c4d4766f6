"""What a command-line job prints: progress lines for its long phases (compiling, embedding a
split, probe fits, kNN, pictures) — one line when the phase starts, one with its duration when it
ends, so no phase longer than a few seconds is silent — and, by default, no third-party log lines
(`quiet_logs`).

```
with progress.phase("compiling the train step"):
    step_fn = jit_train_step(...).lower(...).compile()
# prints "compiling the train step ..." then "compiling the train step: 41.2 s"
```

Printed by process 0 only (every process runs the same phases). Imports nothing of the package.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import os
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import NoReturn


def _is_first_process() -> bool:
    jax = sys.modules.get("jax")  # not imported here: a job that has not started JAX is process 0
    if jax is None:
        return True
    try:
        return jax.process_index() == 0
    except Exception:  # noqa: BLE001 - no backend yet
        return True


_OPEN: list[str] = []  # the phases started and not yet ended, innermost last
_INTERRUPTED: list[str] = []  # the innermost phase a KeyboardInterrupt left, once
_CTRL_C: list[int] = []  # SIGINTs that `interrupt` received


def interrupt(signum, frame) -> None:
    """A job's SIGINT handler (`signal.signal(SIGINT, progress.interrupt)`): `KeyboardInterrupt`
    at once. Python prints and drops an exception raised inside a gc callback, a `__del__` or a
    weakref callback (a traceback on the console, and the job goes on): where the signal lands in
    one of those (`frame`'s callers), the signal is sent again 50 ms later instead, and a Ctrl-C
    swallowed all the same is raised again at the end of the running phase (`running`)."""
    _CTRL_C.append(signum)
    if _in_a_swallowing_callback(frame):
        threading.Timer(0.05, os.kill, (os.getpid(), signum)).start()
        return
    raise KeyboardInterrupt


def _in_a_swallowing_callback(frame) -> bool:
    """Whether `frame` or a caller is a gc callback, a `__del__` or a weakref callback."""
    callbacks = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    while frame is not None:
        code = frame.f_code
        if code in callbacks or code.co_name == "__del__" or code.co_filename == weakref.__file__:
            return True
        frame = frame.f_back
    return False


def current() -> str | None:
    """The phase a Ctrl-C interrupted, else the innermost phase now running, else None."""
    return (_INTERRUPTED or _OPEN or [None])[-1]


def say(line: str) -> None:
    """One progress line on stdout (process 0), flushed at once."""
    if _is_first_process():
        print(line, flush=True)


@contextlib.contextmanager
def phase(what: str) -> Iterator[None]:
    """`what ...` before the block and `what: N.N s` after it (not when the block raises: the
    error is the line to read)."""
    done = start(what)
    with running(what):
        yield
    done()


@contextlib.contextmanager
def running(what: str) -> Iterator[None]:
    """Marks the block as phase `what` for `current()` without a line (a phase that prints its
    own)."""
    if what not in _OPEN:
        _OPEN.append(what)
    try:
        yield
        if _CTRL_C:  # a Ctrl-C inside that something swallowed
            raise KeyboardInterrupt
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt) and not _INTERRUPTED:
            _INTERRUPTED.append(what)
        raise
    finally:
        if what in _OPEN:
            _OPEN.remove(what)


def start(what: str) -> Callable[[], None]:
    """`what ...` now; the returned function says `what: N.N s` (for a phase that ends inside a
    loop, e.g. the compilation that the first step pays)."""
    say(f"{what} ...")
    _OPEN.append(what)
    began = time.perf_counter()

    def done() -> None:
        if what in _OPEN:
            _OPEN.remove(what)
        say(f"{what}: {format_seconds(time.perf_counter() - began)}")

    return done


def format_seconds(seconds: float) -> str:
    """`4.2 s`, `3 min 05 s`: durations in progress lines."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s"


def quiet_logs(*, verbose: bool = False) -> None:
    """A job's default console: only its own lines and warnings. absl logging (orbax, clu) at
    WARNING, and TensorFlow imported here with the process's stderr captured: its C++ start-up
    lines (oneDNN, 'All log messages before absl::InitializeLog()') are written before its logger
    starts, so `TF_CPP_MIN_LOG_LEVEL` does not stop them; an import that fails replays them.
    `verbose` (absl's `--verbosity` given) changes nothing: every library logs as it would."""
    if verbose:
        return
    from absl import logging

    logging.set_verbosity(logging.WARNING)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if "tensorflow" in sys.modules or importlib.util.find_spec("tensorflow") is None:
        return
    with captured_stderr() as captured:
        try:
            import tensorflow  # noqa: F401
        except BaseException:
            captured.replay = True
            raise


class _Captured:
    replay = False


@contextlib.contextmanager
def captured_stderr() -> Iterator[_Captured]:
    """File descriptor 2 (C++ libraries write there directly, e.g. TensorFlow at import, libjpeg
    for a corrupt file) into a temporary file; written back to stderr when `.replay` is set."""
    sys.stderr.flush()
    saved = os.dup(2)
    captured = _Captured()
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield captured
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            if captured.replay:
                tmp.seek(0)
                sys.stderr.write(tmp.read().decode(errors="replace"))
                sys.stderr.flush()


def user_error(error: object) -> NoReturn:
    """How every command ends a user error (bad config, data, checkpoint or workdir): one
    `error: ...` line on stderr and exit status 2, no traceback."""
    print(f"error: {error}", file=sys.stderr, flush=True)
    sys.exit(2)


def exit_now(code: int) -> NoReturn:
    """Exit at the end of a job (everything written) or after a stop request (its checkpoint
    written): one process skips the interpreter's teardown (TensorFlow's and XLA's: seconds of
    silence that a Ctrl-C turns into a traceback, and that a scheduler's grace period may not
    have); several processes exit normally, so `jax.distributed` shuts down in step."""
    jax = sys.modules.get("jax")  # not imported: one process

    sys.stdout.flush()
    sys.stderr.flush()
    if jax is None or jax.process_count() == 1:
        os._exit(code)
    sys.exit(code)
