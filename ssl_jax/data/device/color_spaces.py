"""RGB → CMC's colour spaces on jnp arrays (device, inside the jitted step): the twin of
`host/color_spaces.py`, reading the constants of `data/color.py`."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ssl_jax.data import color


def _lab_jnp(rgb: jnp.ndarray) -> jnp.ndarray:
    linear = jnp.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    t = (linear @ color.matrix_t(color.XYZ_FROM_RGB)) / np.asarray(color.D65_WHITE, np.float32)
    f = jnp.where(t > color.LAB_EPSILON, jnp.cbrt(t), color.LAB_KAPPA * t + 16.0 / 116.0)
    fx, fy, fz = f[..., 0], f[..., 1], f[..., 2]
    return jnp.stack([116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)], axis=-1)


def rgb_to_lab(rgb: jnp.ndarray) -> jnp.ndarray:
    """float RGB `[..., 3]` in [0, 1] → CIE Lab `[..., 3]` (L in [0, 100]), float32."""
    return _lab_jnp(jnp.asarray(rgb, jnp.float32))


def rgb_to_ycbcr(rgb: jnp.ndarray) -> jnp.ndarray:
    """float RGB in [0, 1] → BT.601 YCbCr (Y in [16, 235]), float32."""
    rgb = jnp.asarray(rgb, jnp.float32)
    return rgb @ color.matrix_t(color.YCBCR_FROM_RGB) + np.asarray(color.YCBCR_OFFSET, np.float32)


def rgb_to_ydbdr(rgb: jnp.ndarray) -> jnp.ndarray:
    """float RGB in [0, 1] → YDbDr (Y in [0, 1], Db/Dr in [-1.333, 1.333]), float32."""
    return jnp.asarray(rgb, jnp.float32) @ color.matrix_t(color.YDBDR_FROM_RGB)


CONVERT = {"lab": rgb_to_lab, "ycbcr": rgb_to_ycbcr, "ydbdr": rgb_to_ydbdr}


def convert(rgb: jnp.ndarray, space: str, normalize: bool = True) -> jnp.ndarray:
    """float RGB `[..., 3]` in [0, 1] → `space`, normalised with its official mean/std
    (`color.SPACES[space]`) unless `normalize=False`; float32."""
    cs = color.check_space(space)
    out = CONVERT[space](rgb)
    return color.standardize(out, cs) if normalize else out
