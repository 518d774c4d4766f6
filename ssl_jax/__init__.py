"""ssl_jax: self-supervised contrastive pretraining of image encoders in JAX/Flax."""

__version__ = "0.1.0"
