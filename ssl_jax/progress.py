"""Progress lines for the long phases of a job (compiling, embedding a split, probe fits, kNN,
pictures): one line when the phase starts, one with its duration when it ends, so no phase longer
than a few seconds is silent.

```
with progress.phase("compiling the train step"):
    step_fn = jit_train_step(...).lower(...).compile()
# prints "compiling the train step ..." then "compiling the train step: 41.2 s"
```

Printed by process 0 only (every process runs the same phases). Imports nothing of the package.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator


def _is_first_process() -> bool:
    jax = sys.modules.get("jax")  # not imported here: a job that has not started JAX is process 0
    if jax is None:
        return True
    try:
        return jax.process_index() == 0
    except Exception:  # noqa: BLE001 - no backend yet
        return True


def say(line: str) -> None:
    """One progress line on stdout (process 0), flushed at once."""
    if _is_first_process():
        print(line, flush=True)


@contextlib.contextmanager
def phase(what: str) -> Iterator[None]:
    """`what ...` before the block and `what: N.N s` after it (not when the block raises: the
    error is the line to read)."""
    say(f"{what} ...")
    start = time.perf_counter()
    yield
    say(f"{what}: {format_seconds(time.perf_counter() - start)}")


def format_seconds(seconds: float) -> str:
    """`4.2 s`, `3 min 05 s`: durations in progress lines."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest:02d} s"
