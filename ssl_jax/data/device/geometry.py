"""The geometric ops on the accelerator (jnp): the twins of `host/geometry.py`, for the whole
recipe on the device (`config.data.pipeline = 'device'`) and the crops cut from canvases
(`canvas.py`).

Every op reads the host's uniforms (`recipe_ops`: op k reads its own columns of `u [N, D]`), so a
view here is the host's view for the same `u`, up to float rounding (float32 here, float64 in the
host's crop sampler): `recipe.recipe_view` is checked against it.
"""

import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

from ssl_jax.data import recipe_ops
from ssl_jax.data.recipe_ops import jigsaw_cells, size_pair


def resample_matrix(
    start: jnp.ndarray, length: jnp.ndarray, in_size: int, out_size: int, antialias: bool
) -> jnp.ndarray:
    """`[N, out_size, in_size]` weights resizing pixels `[start, start + length)` to `out_size`: the
    host's `geometry.resample_matrix` (triangle kernel at half-pixel centres, widened by the
    downscaling factor when `antialias`, restricted to the crop, normalised)."""
    start = start.astype(jnp.float32)[:, None, None]
    length = length.astype(jnp.float32)[:, None, None]
    step = length / out_size
    support = jnp.maximum(step, 1.0) if antialias else jnp.ones_like(step)
    centre = start + (jnp.arange(out_size, dtype=jnp.float32)[None, :, None] + 0.5) * step
    pixel = jnp.arange(in_size, dtype=jnp.float32)[None, None, :]
    weight = jnp.maximum(0.0, 1.0 - jnp.abs(pixel + 0.5 - centre) / support)
    weight = weight * ((pixel >= start) & (pixel < start + length))
    return weight / jnp.sum(weight, axis=-1, keepdims=True)


def rrc_params(
    u: jnp.ndarray, height: int, width: int, scale: Sequence[float], ratio: Sequence[float]
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """`(top, left, h, w)`, each int32 `[N]`, from `u [N, 22]`: torchvision's
    `RandomResizedCrop.get_params` (10 attempts, area ~ U[scale]·area, log-uniform ratio, `round`
    half to even, the first attempt that fits, else the whole image with its ratio clamped into
    `ratio`, centred), as the host's `geometry.rrc_params`."""
    attempts = recipe_ops.RRC_ATTEMPTS
    area = float(height * width)
    target_area = area * (scale[0] + (scale[1] - scale[0]) * u[:, :attempts])
    lo, hi = math.log(ratio[0]), math.log(ratio[1])
    aspect = jnp.exp(lo + (hi - lo) * u[:, attempts : 2 * attempts])
    w = jnp.round(jnp.sqrt(target_area * aspect))  # jnp.round: half to even, as Python's round
    h = jnp.round(jnp.sqrt(target_area / aspect))
    ok = (w > 0) & (h > 0) & (w <= width) & (h <= height)
    first = jnp.argmax(ok, axis=1)[:, None]  # the first attempt that fits
    h = jnp.take_along_axis(h, first, axis=1)[:, 0]
    w = jnp.take_along_axis(w, first, axis=1)[:, 0]
    # torch.randint(0, H - h + 1): a uniform integer in [0, H - h]
    top = jnp.minimum(jnp.floor(u[:, 2 * attempts] * (height - h + 1)), height - h)
    left = jnp.minimum(jnp.floor(u[:, 2 * attempts + 1] * (width - w + 1)), width - w)
    in_ratio = width / height  # the fallback is static: the whole image, ratio clamped, centred
    fb_w = round(height * ratio[1]) if in_ratio > ratio[1] else width
    fb_h = round(width / ratio[0]) if in_ratio < ratio[0] else height
    fallback = ((height - fb_h) // 2, (width - fb_w) // 2, fb_h, fb_w)
    found = jnp.any(ok, axis=1)
    return tuple(  # type: ignore[return-value]
        jnp.where(found, v, fb).astype(jnp.int32) for v, fb in zip((top, left, h, w), fallback)
    )


def resample(x, top, left, height, width, out_hw: tuple[int, int], antialias: bool):
    """Float `[N, H, W, C]` → `[N, out_h, out_w, C]`: each example's box `(top, left, height,
    width)` resized (the host's resampling matrices, two batched products in f32)."""
    side_h, side_w = x.shape[1:3]
    hi = jax.lax.Precision.HIGHEST  # f32 products: TF32 / bf16 passes would move grey levels
    wy = resample_matrix(top, height, side_h, out_hw[0], antialias)
    wx = resample_matrix(left, width, side_w, out_hw[1], antialias)
    y = jnp.einsum("nsh,nhwc->nswc", wy, x, precision=hi)
    return jnp.einsum("ntw,nswc->nstc", wx, y, precision=hi)


def _rrc_u(x, u, *, size, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3), antialias=True):
    height, width = x.shape[1:3]
    box = rrc_params(u, height, width, scale, ratio)
    return resample(x, *box, size_pair(size), antialias)


def _resize_u(x, u, *, size, antialias=True):
    """`resize`: an int is the shorter side (the other `int(size · long / short)`), a pair is
    `(h, w)`; the whole image, antialiased when it shrinks."""
    del u
    height, width = x.shape[1:3]
    if isinstance(size, int):
        long = int(size * max(height, width) / min(height, width))
        out_hw = (size, long) if height <= width else (long, size)
    else:
        out_hw = size_pair(size)
    n = x.shape[0]
    zero = jnp.zeros([n], jnp.int32)
    full = (jnp.full([n], height, jnp.int32), jnp.full([n], width, jnp.int32))
    return resample(x, zero, zero, *full, out_hw, antialias)


def _center_crop_u(x, u, *, size):
    """`center_crop`: zero padding where the crop is larger, `round((H − h) / 2)` offsets."""
    del u
    crop_h, crop_w = size_pair(size)
    height, width = x.shape[1:3]
    pad_h, pad_w = max(crop_h - height, 0), max(crop_w - width, 0)
    pads = ((0, 0), (pad_h // 2, (pad_h + 1) // 2), (pad_w // 2, (pad_w + 1) // 2), (0, 0))
    x = jnp.pad(x, pads)
    top = round((height + pad_h - crop_h) / 2)
    left = round((width + pad_w - crop_w) / 2)
    return x[:, top : top + crop_h, left : left + crop_w]


def _flip_u(x, u, *, p):
    return jnp.where(u[:, 0, None, None, None] < p, x[:, :, ::-1], x)


def _jigsaw_u(x, u, *, grid, patch):
    """The jigsaw mosaic (`recipe_ops.jigsaw_cells`), as the host's `geometry._jigsaw`."""
    n, height, width, channels = x.shape
    cell_h, cell_w = jigsaw_cells(height, width, grid, patch)
    cells = grid * grid
    origin = (jnp.arange(cells) // grid, jnp.arange(cells) % grid)
    offsets = []
    for axis, (cell, u_axis) in enumerate(((cell_h, u[:, :cells]), (cell_w, u[:, cells:]))):
        shift = jnp.minimum((u_axis * (cell - patch + 1)).astype(jnp.int32), cell - patch)
        start = origin[axis][None, :] * cell + shift  # [N, cells]
        offsets.append(start[:, :, None] + jnp.arange(patch)[None, None, :])  # [N, cells, patch]
    rows, cols = offsets
    example = jnp.arange(n)[:, None, None, None]
    y = x[example, rows[:, :, :, None], cols[:, :, None, :]]  # [N, cells, patch, patch, C]
    y = y.reshape(n, grid, grid, patch, patch, channels).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(n, grid * patch, grid * patch, channels)


# op → `fn(x float [N, H, W, C] in [0, 1], u [N, op_draws(op)], **params)` (`recipe.RECIPE_OPS`)
UNIFORM_OPS: dict[str, Callable[..., jnp.ndarray]] = {
    "random_resized_crop": _rrc_u,
    "resize": _resize_u,
    "center_crop": _center_crop_u,
    "horizontal_flip": _flip_u,
    "jigsaw": _jigsaw_u,
}
