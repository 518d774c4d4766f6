"""ssl_jax: self-supervised contrastive pretraining of image encoders in JAX/Flax.

`ssl_jax.load_encoder(path)` (see `ssl_jax.evaluate.encoder`) is imported lazily, so
`import ssl_jax` stays light (no JAX / TensorFlow import).
"""

import os
import sys
import warnings

__version__ = "0.1.0"
__all__ = ["load_encoder"]

# XLA:CPU flags set on import, before any backend starts (XLA reads XLA_FLAGS then); a flag of
# the same name already in XLA_FLAGS wins. YNNPACK's convolution fusions are slower than XLA:CPU's
# own convolutions on ResNet layers at 8-32 px, while its element-wise and reduction fusions (BN)
# are the fast ones, so only the convolution type is dropped (figures: docs/performance.md,
# "Against a peer library on the same CPU"). CPU-only: GPU and TPU backends ignore it.
XLA_FLAG_DEFAULTS = ("--xla_cpu_experimental_ynn_fusion_type=-individual_convolution",)


def add_xla_flag(flag: str) -> bool:
    """Append `--name=value` to XLA_FLAGS unless a flag of that name is already there (the user's
    value wins); returns whether it was added. Only takes effect before the first backend starts."""
    flags = os.environ.get("XLA_FLAGS", "")
    if flag.split("=")[0] in flags:
        return False
    os.environ["XLA_FLAGS"] = f"{flags} {flag}".strip()
    return True


def _cpu_backend_started() -> bool:
    """Whether JAX already runs on its CPU backend (so XLA_FLAGS set now are ignored); False when
    JAX is not imported yet, and where its private `backends_are_initialized` is gone."""
    if "jax" not in sys.modules:
        return False
    try:
        from jax._src import xla_bridge

        return (
            xla_bridge.backends_are_initialized() and sys.modules["jax"].default_backend() == "cpu"
        )
    except Exception:  # noqa: BLE001 - a private API: never let it break the import
        return False


_added = [flag for flag in XLA_FLAG_DEFAULTS if add_xla_flag(flag)]
if _added and _cpu_backend_started():
    warnings.warn(
        f"ssl_jax was imported after JAX started its CPU backend, so {' '.join(_added)} did not "
        "take effect: XLA:CPU runs ResNet convolutions through YNNPACK, 2-3x slower. Import "
        "ssl_jax before the first JAX computation, or put the flag in XLA_FLAGS yourself.",
        stacklevel=2,
    )


def __getattr__(name: str):
    if name == "load_encoder":
        from ssl_jax.evaluate.encoder import load_encoder

        return load_encoder
    raise AttributeError(f"module 'ssl_jax' has no attribute {name!r}")
