"""Shared set-up of the benchmark scripts."""

from __future__ import annotations

import os


def simulate_devices(count: int) -> None:
    """Ask XLA:CPU for `count` host devices (`--xla_force_host_platform_device_count`). Call it
    before jax is imported; a count already in XLA_FLAGS is kept."""
    from ssl_jax import add_xla_flag

    if count > 1:
        add_xla_flag(f"--xla_force_host_platform_device_count={count}")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def stub_tensorflow_if_missing() -> bool:
    """On a host without TensorFlow (a GPU image that ships JAX and PyTorch only; TensorFlow's wheel is
    too large to carry there), make `import tensorflow[_datasets]` succeed with an inert stand-in, so
    the library's modules import and a step can be compiled and timed on synthetic batches. Anything
    that would *use* TensorFlow (the input pipeline, tfds) gets meaningless objects instead, so only
    `--step-only` style measurements may run after this. Returns whether the stand-in was installed."""
    import importlib.machinery
    import importlib.util
    import sys
    import types

    if importlib.util.find_spec("tensorflow") is not None:
        return False

    class _AnyType(type):
        def __getattr__(cls, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Any

    class _Any(metaclass=_AnyType):
        def __init__(self, *args, **kwargs):
            pass

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Any()

        def __call__(self, *args, **kwargs):
            return _Any()

    class _Module(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Any

    class _Finder:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("tensorflow", "tensorflow_datasets"):
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec):
            return _Module(spec.name)

        def exec_module(self, module):
            module.__path__ = []

    sys.meta_path.insert(0, _Finder())
    return True
