"""RGB → CMC's colour spaces on tf tensors (host, tf.data): the twin of `device/color_spaces.py`,
reading the constants of `data/color.py`."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from ssl_jax.data import color


def _lab_tf(rgb):
    linear = tf.where(rgb > 0.04045, tf.pow((rgb + 0.055) / 1.055, 2.4), rgb / 12.92)
    t = tf.tensordot(linear, color.matrix_t(color.XYZ_FROM_RGB), axes=1) / np.asarray(
        color.D65_WHITE, np.float32
    )
    # max(): the untaken branch of tf.where must stay finite (also for gradients)
    cbrt = tf.pow(tf.maximum(t, color.LAB_EPSILON), 1.0 / 3.0)
    f = tf.where(t > color.LAB_EPSILON, cbrt, color.LAB_KAPPA * t + 16.0 / 116.0)
    fx, fy, fz = f[..., 0], f[..., 1], f[..., 2]
    return tf.stack([116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)], axis=-1)


def rgb_to_lab_tf(rgb: Any):
    """float RGB `[..., 3]` in [0, 1] → CIE Lab `[..., 3]` (L in [0, 100]), float32."""
    return _lab_tf(tf.cast(rgb, tf.float32))


def rgb_to_ycbcr_tf(rgb: Any):
    """float RGB in [0, 1] → BT.601 YCbCr (Y in [16, 235]), float32."""
    rgb = tf.cast(rgb, tf.float32)
    return tf.tensordot(rgb, color.matrix_t(color.YCBCR_FROM_RGB), axes=1) + np.asarray(
        color.YCBCR_OFFSET, np.float32
    )


def rgb_to_ydbdr_tf(rgb: Any):
    """float RGB in [0, 1] → YDbDr (Y in [0, 1], Db/Dr in [-1.333, 1.333]), float32."""
    return tf.tensordot(tf.cast(rgb, tf.float32), color.matrix_t(color.YDBDR_FROM_RGB), axes=1)


CONVERT_TF = {"lab": rgb_to_lab_tf, "ycbcr": rgb_to_ycbcr_tf, "ydbdr": rgb_to_ydbdr_tf}


def convert_tf(rgb: Any, space: str, normalize: bool = True):
    """float RGB `[..., 3]` in [0, 1] → `space`, normalised with its official mean/std
    (`color.SPACES[space]`) unless `normalize=False`; float32."""
    cs = color.check_space(space)
    out = CONVERT_TF[space](rgb)
    return color.standardize(out, cs) if normalize else out
