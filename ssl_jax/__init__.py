"""ssl_jax: self-supervised contrastive pretraining of image encoders in JAX/Flax.

`ssl_jax.load_encoder(path)` (see `ssl_jax.evaluate.encoder`) is imported lazily, so
`import ssl_jax` stays light (no JAX / TensorFlow import).
"""

__version__ = "0.1.0"
__all__ = ["load_encoder"]


def __getattr__(name: str):
    if name == "load_encoder":
        from ssl_jax.evaluate.encoder import load_encoder

        return load_encoder
    raise AttributeError(f"module 'ssl_jax' has no attribute {name!r}")
