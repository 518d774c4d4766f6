"""The environment of every test process: the pytest workers and the processes the tests start.

The suite's models are tiny, so most of its time is XLA:CPU compiling:
- `--xla_backend_optimization_level=0` skips LLVM's optimisation of the generated code, most of
  a compile. The HLO (XLA's own passes: fusion, sharding, collectives) is the one a user's run
  compiles and one-process results agree with the default level's to float rounding, so every
  equality the tests check still holds; the programs run slower, which tiny shapes do not notice.
- One persistent compilation cache (`JAX_COMPILATION_CACHE_DIR`, `$SSL_JAX_TEST_CACHE` or
  `.jax_cache/` in the checkout) for the pytest workers and the processes they start, which
  inherit the variables: the same tiny step compiled by several tests compiles once. Every
  compile is kept, however short: a process's first checkpoint save compiles one slice per array
  and replica (orbax's replica-parallel save), seconds in all, read back from the cache in under one.
A 2-process run (`multi_process_env`) compiles at level 1 and without the cache: at level 0 its
losses leave the one-process run's from the third step (deterministically; at levels 1 and 2 they
agree to 1e-6), and an executable of a cross-process computation loaded from the cache hangs
gloo's collectives. A user's run sets neither (`ssl_jax.XLA_FLAG_DEFAULTS` does not);
`tests/test_readme.py` runs the README's commands at the default level (with the cache, which
changes no result). Figures: docs/performance.md, "The test suite's time".
"""

import os

OPT_LEVEL = "--xla_backend_optimization_level={level}"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPILE_CACHE = {
    "JAX_COMPILATION_CACHE_DIR": os.environ.get(
        "SSL_JAX_TEST_CACHE", os.path.join(ROOT, ".jax_cache")
    ),
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
}


def xla_flags(devices: int | None = None, level: int = 0) -> str:
    """XLA_FLAGS for a test process with `devices` simulated CPU devices (None: one), its code
    optimised at LLVM `level` (XLA's default: 2)."""
    flags = [] if devices is None else [f"--xla_force_host_platform_device_count={devices}"]
    return " ".join([*flags, OPT_LEVEL.format(level=level)])


def multi_process_env(devices: int, **variables: str) -> dict:
    """The environment of one process of a 2-process CPU run: this one's, without the compile
    cache, at optimisation level 1 with `devices` simulated CPU devices, plus `variables`."""
    env = {k: v for k, v in os.environ.items() if k not in COMPILE_CACHE}
    return {**env, "XLA_FLAGS": xla_flags(devices, level=1), **variables}
