"""ssl_jax: self-supervised contrastive pretraining of image encoders in JAX/Flax.

`ssl_jax.load_encoder(path)` (see `ssl_jax.evaluate.encoder`) is imported lazily, so
`import ssl_jax` stays light (no JAX / TensorFlow import).
"""

import os

__version__ = "0.1.0"
__all__ = ["load_encoder"]

# XLA:CPU flags set on import, before any backend starts (XLA reads XLA_FLAGS then); a flag of
# the same name already in XLA_FLAGS wins. YNNPACK's convolution fusions are 2-3x slower than
# XLA:CPU's own convolutions on ResNet layers at 8-32 px, while its element-wise and reduction
# fusions (BN) are the fast ones, so only the convolution type is dropped. Session 12, the 2-core
# dev machine: a ResNet basic block (64 channels, 32 px) forward + gradient 435 -> 170 ms; MoCo v2
# R18 step 28.0 -> 45.5 img/s at 32 px (CIFAR stem), 446 -> 482 img/s at 28 px
# (`benchmarks/train_step.py --torch`; README, "Against a peer library on the same CPU"). CPU-only:
# GPU and TPU backends ignore it.
XLA_FLAG_DEFAULTS = ("--xla_cpu_experimental_ynn_fusion_type=-individual_convolution",)


def add_xla_flag(flag: str) -> None:
    """Append `--name=value` to XLA_FLAGS unless a flag of that name is already there (the user's
    value wins). Only takes effect before the first backend starts."""
    flags = os.environ.get("XLA_FLAGS", "")
    if flag.split("=")[0] not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {flag}".strip()


for _flag in XLA_FLAG_DEFAULTS:
    add_xla_flag(_flag)


def __getattr__(name: str):
    if name == "load_encoder":
        from ssl_jax.evaluate.encoder import load_encoder

        return load_encoder
    raise AttributeError(f"module 'ssl_jax' has no attribute {name!r}")
