"""Colour spaces of CMC's views: RGB → Lab / YCbCr / YDbDr, normalised, split into 1 + 2 channels.

Each conversion is a pure function twice, on tf tensors (host, tf.data) and on jnp arrays (device,
inside the jitted step); both take float RGB in [0, 1], `[..., 3]`, and agree with each other and
with scikit-image within float32 error (`tests/data/test_color.py`).

- `lab`: `skimage.color.rgb2lab` (sRGB gamma, D65 2° white, L in [0, 100]); what CMC's `RGB2Lab`
  (HobbitLong/CMC `dataset.py`) calls on uint8 images.
- `ycbcr`: `skimage.color.rgb2ycbcr` (ITU-R BT.601, Y in [16, 235], Cb/Cr in [16, 240]); CMC's and
  PyContrast's `RGB2YCbCr` call it.
- `ydbdr`: `skimage.color.rgb2ydbdr` (SECAM, Y in [0, 1], Db/Dr in [-1.333, 1.333]); PyContrast's
  `RGB2YDbDr` (`pycontrast/datasets/util.py`), the colour space of its `CMC` / `CMCv2` presets.

The official code then applies torchvision's `ToTensor` (no rescaling of a float array) and
`Normalize(mean, std)` with the constants of `SPACES` (sources there); `convert` does both.
`split_channels` cuts the result into CMC's two views: L | ab, Y | CbCr, Y | DbDr.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np


@dataclasses.dataclass(frozen=True)
class ColorSpace:
    """A colour space of CMC views: channel names, the official normalisation, the view split
    (channels `[:split]` | `[split:]`) and where the constants come from."""

    name: str
    channels: tuple[str, str, str]
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    split: int
    source: str


# CMC `train_CMC.py`: Lab normalised by the channel ranges L in [0, 100], a in [-86.183, 98.233],
# b in [-107.857, 94.478] (mean = mid-range, std = half-range).
_LAB_RANGES = ((0.0, 100.0), (-86.183, 98.233), (-107.857, 94.478))
LAB_MEAN = tuple((lo + hi) / 2 for lo, hi in _LAB_RANGES)
LAB_STD = tuple((hi - lo) / 2 for lo, hi in _LAB_RANGES)
# CMC `train_CMC.py` L135–137, `--view YCbCr`.
YCBCR_MEAN = (116.151, 121.080, 132.342)
YCBCR_STD = (109.500, 111.855, 111.964)
# PyContrast `datasets/util.py` `build_transforms` (modal 'CMC').
YDBDR_MEAN = (0.457, -0.082, -0.052)
YDBDR_STD = (0.500, 1.331, 1.333)

SPACES: dict[str, ColorSpace] = {
    "lab": ColorSpace(
        "lab", ("L", "a", "b"), LAB_MEAN, LAB_STD, 1, "CMC train_CMC.py (skimage rgb2lab)"
    ),
    "ycbcr": ColorSpace(
        "ycbcr",
        ("Y", "Cb", "Cr"),
        YCBCR_MEAN,
        YCBCR_STD,
        1,
        "CMC train_CMC.py --view YCbCr (skimage rgb2ycbcr)",
    ),
    "ydbdr": ColorSpace(
        "ydbdr",
        ("Y", "Db", "Dr"),
        YDBDR_MEAN,
        YDBDR_STD,
        1,
        "PyContrast datasets/util.py (skimage rgb2ydbdr)",
    ),
}

# scikit-image `skimage/color/colorconv.py` (0.26): sRGB → XYZ, the D65 2° white, BT.601 YCbCr,
# SECAM YDbDr (rows = output channels).
XYZ_FROM_RGB = (
    (0.412453, 0.357580, 0.180423),
    (0.212671, 0.715160, 0.072169),
    (0.019334, 0.119193, 0.950227),
)
D65_WHITE = (0.95047, 1.0, 1.08883)
YCBCR_FROM_RGB = (
    (65.481, 128.553, 24.966),
    (-37.797, -74.203, 112.0),
    (112.0, -93.786, -18.214),
)
YCBCR_OFFSET = (16.0, 128.0, 128.0)
YDBDR_FROM_RGB = ((0.299, 0.587, 0.114), (-0.45, -0.883, 1.333), (-1.333, 1.116, 0.217))
# CIE Lab: f(t) = t^(1/3) above (6/29)^3 (skimage's rounded 0.008856), else 7.787 t + 16/116.
_LAB_EPSILON = 0.008856
_LAB_KAPPA = 7.787


def check_space(space: str) -> ColorSpace:
    """`SPACES[space]`; ValueError naming the allowed spaces otherwise."""
    if space not in SPACES:
        raise ValueError(f"colour space {space!r} is not one of {tuple(SPACES)}.")
    return SPACES[space]


def _matrix_t(m: tuple) -> np.ndarray:
    """`[3, 3]` float32, transposed so that `rgb @ m` applies the rows of `m`."""
    return np.asarray(m, np.float32).T


# --------------------------------------------------------------------------------------------------
# jnp (device)


def _lab_jnp(rgb: jnp.ndarray) -> jnp.ndarray:
    linear = jnp.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    t = (linear @ _matrix_t(XYZ_FROM_RGB)) / np.asarray(D65_WHITE, np.float32)
    f = jnp.where(t > _LAB_EPSILON, jnp.cbrt(t), _LAB_KAPPA * t + 16.0 / 116.0)
    fx, fy, fz = f[..., 0], f[..., 1], f[..., 2]
    return jnp.stack([116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)], axis=-1)


def rgb_to_lab(rgb: jnp.ndarray) -> jnp.ndarray:
    """float RGB `[..., 3]` in [0, 1] → CIE Lab `[..., 3]` (L in [0, 100]), float32."""
    return _lab_jnp(jnp.asarray(rgb, jnp.float32))


def rgb_to_ycbcr(rgb: jnp.ndarray) -> jnp.ndarray:
    """float RGB in [0, 1] → BT.601 YCbCr (Y in [16, 235]), float32."""
    rgb = jnp.asarray(rgb, jnp.float32)
    return rgb @ _matrix_t(YCBCR_FROM_RGB) + np.asarray(YCBCR_OFFSET, np.float32)


def rgb_to_ydbdr(rgb: jnp.ndarray) -> jnp.ndarray:
    """float RGB in [0, 1] → YDbDr (Y in [0, 1], Db/Dr in [-1.333, 1.333]), float32."""
    return jnp.asarray(rgb, jnp.float32) @ _matrix_t(YDBDR_FROM_RGB)


CONVERT = {"lab": rgb_to_lab, "ycbcr": rgb_to_ycbcr, "ydbdr": rgb_to_ydbdr}


def convert(rgb: jnp.ndarray, space: str, normalize: bool = True) -> jnp.ndarray:
    """float RGB `[..., 3]` in [0, 1] → `space`, normalised with its official mean/std
    (`SPACES[space]`) unless `normalize=False`; float32."""
    cs = check_space(space)
    out = CONVERT[space](rgb)
    if normalize:
        out = (out - np.asarray(cs.mean, np.float32)) / np.asarray(cs.std, np.float32)
    return out


# --------------------------------------------------------------------------------------------------
# tf (host)


def _lab_tf(rgb):
    import tensorflow as tf  # the host pipeline's path only: device code never imports TF

    linear = tf.where(rgb > 0.04045, tf.pow((rgb + 0.055) / 1.055, 2.4), rgb / 12.92)
    t = tf.tensordot(linear, _matrix_t(XYZ_FROM_RGB), axes=1) / np.asarray(D65_WHITE, np.float32)
    # max(): the untaken branch of tf.where must stay finite (also for gradients)
    cbrt = tf.pow(tf.maximum(t, _LAB_EPSILON), 1.0 / 3.0)
    f = tf.where(t > _LAB_EPSILON, cbrt, _LAB_KAPPA * t + 16.0 / 116.0)
    fx, fy, fz = f[..., 0], f[..., 1], f[..., 2]
    return tf.stack([116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)], axis=-1)


def rgb_to_lab_tf(rgb: Any):
    """`rgb_to_lab` on tf tensors."""
    import tensorflow as tf

    return _lab_tf(tf.cast(rgb, tf.float32))


def rgb_to_ycbcr_tf(rgb: Any):
    """`rgb_to_ycbcr` on tf tensors."""
    import tensorflow as tf

    rgb = tf.cast(rgb, tf.float32)
    return tf.tensordot(rgb, _matrix_t(YCBCR_FROM_RGB), axes=1) + np.asarray(
        YCBCR_OFFSET, np.float32
    )


def rgb_to_ydbdr_tf(rgb: Any):
    """`rgb_to_ydbdr` on tf tensors."""
    import tensorflow as tf

    return tf.tensordot(tf.cast(rgb, tf.float32), _matrix_t(YDBDR_FROM_RGB), axes=1)


CONVERT_TF = {"lab": rgb_to_lab_tf, "ycbcr": rgb_to_ycbcr_tf, "ydbdr": rgb_to_ydbdr_tf}


def convert_tf(rgb: Any, space: str, normalize: bool = True):
    """`convert` on tf tensors."""
    cs = check_space(space)
    out = CONVERT_TF[space](rgb)
    if normalize:
        out = (out - np.asarray(cs.mean, np.float32)) / np.asarray(cs.std, np.float32)
    return out


# --------------------------------------------------------------------------------------------------


def split_channels(x: Any, space: str) -> tuple[Any, Any]:
    """CMC's two views of a converted image `[..., 3]` (tf or jnp): `(x[..., :1], x[..., 1:])` =
    (L, ab), (Y, CbCr) or (Y, DbDr), i.e. `[..., 1]` and `[..., 2]`."""
    k = check_space(space).split
    return x[..., :k], x[..., k:]
