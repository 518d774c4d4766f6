"""Colour spaces of CMC's views, as data: each space's channels, official normalisation and view
split, and the matrices of its conversion from RGB (numpy only).

The conversions are twins: `host/color_spaces.py` (tf) and `device/color_spaces.py` (jnp) both read
these constants, take float RGB in [0, 1], `[..., 3]`, and agree with each other and with
scikit-image within float32 error (`tests/data/device/test_device_color_spaces.py`).

- `lab`: `skimage.color.rgb2lab` (sRGB gamma, D65 2° white, L in [0, 100]); what CMC's `RGB2Lab`
  (HobbitLong/CMC `dataset.py`) calls on uint8 images.
- `ycbcr`: `skimage.color.rgb2ycbcr` (ITU-R BT.601, Y in [16, 235], Cb/Cr in [16, 240]); CMC's and
  PyContrast's `RGB2YCbCr` call it.
- `ydbdr`: `skimage.color.rgb2ydbdr` (SECAM, Y in [0, 1], Db/Dr in [-1.333, 1.333]); PyContrast's
  `RGB2YDbDr` (`pycontrast/datasets/util.py`), the colour space of its `CMC` / `CMCv2` presets.

The official code then applies torchvision's `ToTensor` (no rescaling of a float array) and
`Normalize(mean, std)` with the constants of `SPACES` (sources there): `standardize`. The model
splits the result into CMC's two views at `ColorSpace.split`: L | ab, Y | CbCr, Y | DbDr.
"""

from __future__ import annotations

import dataclasses
from typing import Any

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
LAB_EPSILON = 0.008856
LAB_KAPPA = 7.787


def check_space(space: str) -> ColorSpace:
    """`SPACES[space]`; ValueError naming the allowed spaces otherwise."""
    if space not in SPACES:
        raise ValueError(f"colour space {space!r} is not one of {tuple(SPACES)}.")
    return SPACES[space]


def matrix_t(m: tuple) -> np.ndarray:
    """`[3, 3]` float32, transposed so that `rgb @ m` applies the rows of `m`."""
    return np.asarray(m, np.float32).T


def standardize(x: Any, cs: ColorSpace) -> Any:
    """Converted `[..., 3]` (tf or jnp) → `(x − mean) / std` with `cs`'s official constants."""
    return (x - np.asarray(cs.mean, np.float32)) / np.asarray(cs.std, np.float32)
