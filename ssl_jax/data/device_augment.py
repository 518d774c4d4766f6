"""Image ops that run on the accelerator inside the jitted step (jnp only).

The host pipeline hands over uint8 crops; normalisation (and, per config, the colour ops of a recipe)
happen here so the host-to-device copy stays uint8.
"""

from collections.abc import Sequence

import jax.numpy as jnp


def normalize(
    images: jnp.ndarray, mean: Sequence[float], std: Sequence[float], dtype=jnp.float32
) -> jnp.ndarray:
    """uint8 `[N, H, W, C]` → `(x/255 − mean)/std` in `dtype`; mean/std in [0, 1] pixel units."""
    x = images.astype(jnp.float32) / 255.0
    x = (x - jnp.asarray(mean, jnp.float32)) / jnp.asarray(std, jnp.float32)
    return x.astype(dtype)
