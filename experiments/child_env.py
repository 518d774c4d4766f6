"""The environment of a child python from another venv (the official code's, the peer's), where
the checkout is not installed: this process's environment with the repository root ahead on
`PYTHONPATH`, so the child imports `ssl_jax`, `experiments` and `benchmarks` from this checkout."""

from __future__ import annotations

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def checkout_env() -> dict[str, str]:
    """`os.environ` with `ROOT` first on `PYTHONPATH` (an existing `PYTHONPATH` follows it)."""
    path = os.pathsep.join(filter(None, (ROOT, os.environ.get("PYTHONPATH", ""))))
    return {**os.environ, "PYTHONPATH": path}
