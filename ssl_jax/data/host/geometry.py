"""The host's geometric ops (TensorFlow): crops, resizes, flips, the jigsaw mosaic, and the canvases
and crop boxes of `data.device_crops`.

Batch ops `op(images [N, H, W, C], u [N, op_draws(op)], **params)` (`BATCH_OPS`). Small fixed-size
sources (≤ `MAX_BATCHED_CROP_PIXELS`) are cropped and resized as two batched matmuls with
per-example resampling matrices; large or variable-size images one at a time, where the crop happens
on uint8 before any float conversion and antialiasing runs only when the crop is downscaled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import tensorflow as tf

from ssl_jax.data.host.tensors import apply_where, dims, lerp, to_float, to_uint8
from ssl_jax.data.recipe_ops import (
    RRC_ATTEMPTS,
    jigsaw_cells,
    op_draws,
    op_kwargs,
    size_pair,
)

# Fixed-size sources up to this many pixels are augmented in batches (crop + resize by resampling
# matrices); larger or variable-size ones image by image (slice + tf.image.resize), before batching.
MAX_BATCHED_CROP_PIXELS = 160 * 160


def rrc_params(
    u: tf.Tensor, height: Any, width: Any, scale: Sequence[float], ratio: Sequence[float]
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    """`(top, left, h, w)`, each int32 `[N]`, from uniforms `u [N, 22]`, as torchvision's
    `RandomResizedCrop.get_params` for `height × width` images."""
    u = tf.cast(u, tf.float64)
    height_f = tf.cast(height, tf.float64)
    width_f = tf.cast(width, tf.float64)
    area = height_f * width_f
    target_area = area * lerp(u[:, :RRC_ATTEMPTS], scale[0], scale[1])
    log_ratio = lerp(u[:, RRC_ATTEMPTS : 2 * RRC_ATTEMPTS], math.log(ratio[0]), math.log(ratio[1]))
    aspect = tf.exp(log_ratio)
    w = tf.round(tf.sqrt(target_area * aspect))  # tf.round: half to even, like Python's round
    h = tf.round(tf.sqrt(target_area / aspect))
    ok = (w > 0) & (h > 0) & (w <= width_f) & (h <= height_f)
    first = tf.argmax(tf.cast(ok, tf.int32), axis=1, output_type=tf.int32)  # first fitting attempt
    found = tf.reduce_any(ok, axis=1)
    h = tf.gather(h, first, batch_dims=1)
    w = tf.gather(w, first, batch_dims=1)
    # torch.randint(0, H - h + 1): uniform integer in [0, H - h].
    off = u[:, 2 * RRC_ATTEMPTS :]
    top = tf.minimum(tf.floor(off[:, 0] * (height_f - h + 1)), height_f - h)
    left = tf.minimum(tf.floor(off[:, 1] * (width_f - w + 1)), width_f - w)

    # Fallback: the whole image with its ratio clamped into `ratio`, centred.
    in_ratio = width_f / height_f
    fb_w = tf.where(in_ratio > ratio[1], tf.round(height_f * ratio[1]), width_f)
    fb_h = tf.where(in_ratio < ratio[0], tf.round(width_f / ratio[0]), height_f)
    fb_top = tf.floor((height_f - fb_h) / 2)
    fb_left = tf.floor((width_f - fb_w) / 2)
    out = [tf.where(found, a, b) for a, b in ((top, fb_top), (left, fb_left), (h, fb_h), (w, fb_w))]
    return tuple(tf.cast(v, tf.int32) for v in out)  # type: ignore[return-value]


def resample_matrix(
    start: tf.Tensor, length: tf.Tensor, in_size: int, out_size: int, antialias: bool
) -> tf.Tensor:
    """`[N, out_size, in_size]` weights resizing pixels `[start, start + length)` to `out_size`.

    Triangle kernel centred at `start + (o + 0.5)·length/out_size` (half-pixel centres), widened by
    the downscaling factor when `antialias`, restricted to the crop and normalised: bilinear with
    clamped edges when not widened, the PIL / torch / tf antialiased bilinear filter otherwise.
    """
    start = tf.cast(start, tf.float32)[:, None, None]
    length = tf.cast(length, tf.float32)[:, None, None]
    step = length / out_size
    support = tf.maximum(step, 1.0) if antialias else tf.ones_like(step)
    centre = start + (tf.range(out_size, dtype=tf.float32)[None, :, None] + 0.5) * step
    pixel = tf.range(in_size, dtype=tf.float32)[None, None, :]
    weight = tf.maximum(0.0, 1.0 - tf.abs(pixel + 0.5 - centre) / support)
    weight *= tf.cast((pixel >= start) & (pixel < start + length), tf.float32)
    return weight / tf.reduce_sum(weight, axis=-1, keepdims=True)


def _resize_one(image: tf.Tensor, hw: tuple[Any, Any], antialias: bool) -> tf.Tensor:
    """Bilinear resize of one image `[H, W, C]` (any size), float32 [0, 1] out. Upscaling skips the
    (then identical) antialiasing filter, which is 4× slower."""
    scale = 1.0 / 255.0 if image.dtype == tf.uint8 else 1.0
    size = tf.stack(hw)
    if antialias:
        down = tf.reduce_any(tf.shape(image)[:2] > size)
        x = tf.cast(image, tf.float32)
        out = tf.cond(
            down,
            lambda: tf.image.resize(x, size, method="bilinear", antialias=True),
            lambda: tf.image.resize(x, size, method="bilinear"),
        )
    else:
        out = tf.image.resize(image, size, method="bilinear")
    out = out * scale if scale != 1.0 else out
    static = [d if isinstance(d, int) else None for d in hw]
    return tf.ensure_shape(out, (*static, image.shape[-1]))


def _batched_crops(images: tf.Tensor) -> bool:
    h, w = images.shape[1:3]
    return h is not None and w is not None and h * w <= MAX_BATCHED_CROP_PIXELS


def _random_resized_crop(
    images, u, *, size, scale=(0.08, 1.0), ratio=(0.75, 4 / 3), antialias=True
):
    out_h, out_w = size_pair(size)
    height, width = dims(images, (1, 2))
    top, left, h, w = rrc_params(u, height, width, scale, ratio)
    if _batched_crops(images):
        wy = resample_matrix(top, h, height, out_h, antialias)  # [N, out_h, H]
        wx = resample_matrix(left, w, width, out_w, antialias)  # [N, out_w, W]
        x = to_float(images)
        x = tf.einsum("nsh,nhwc->nswc", wy, x)
        return tf.einsum("ntw,nswc->nstc", wx, x)
    _check_single(images, "random_resized_crop of large or variable-size images")
    crop = images[0, top[0] : top[0] + h[0], left[0] : left[0] + w[0]]
    return _resize_one(crop, (out_h, out_w), antialias)[None]


def fit_canvas(image: tf.Tensor, side: int) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """`data.device_crops`: uint8 `[H, W, C]` → (`[side, side, C]` with the image at the top left
    and zeros elsewhere, its height, its width). An image larger than the canvas is first shrunk
    (antialiased bilinear, aspect kept) to fit, and its crops are cut from that copy: the one place
    where this path differs from the host's."""
    shape = tf.shape(image)
    scale = tf.minimum(1.0, side / tf.cast(tf.maximum(shape[0], shape[1]), tf.float32))
    hw = tf.minimum(side, tf.cast(tf.round(tf.cast(shape[:2], tf.float32) * scale), tf.int32))
    image = tf.cond(
        scale < 1.0, lambda: to_uint8(_resize_one(image, (hw[0], hw[1]), True)), lambda: image
    )
    height, width = tf.shape(image)[0], tf.shape(image)[1]
    return tf.image.pad_to_bounding_box(image, 0, 0, side, side), height, width


def crop_and_flip(
    recipe: Sequence[Mapping[str, Any]], u: tf.Tensor, height: Any, width: Any
) -> tuple[tf.Tensor, tf.Tensor]:
    """`data.device_crops`: the geometry of one view of a `height × width` image, drawn from its
    uniforms `u [num_draws(recipe)]` exactly as the host ops draw it: `(box, flip)` = int32
    `[top, left, h, w]` of the leading `random_resized_crop`, and whether its flips mirror it."""
    rrc = recipe[0]
    params = op_kwargs(rrc)
    k = op_draws(rrc)
    box = rrc_params(
        u[None, :k],
        height,
        width,
        params.get("scale", (0.08, 1.0)),
        params.get("ratio", (0.75, 4 / 3)),
    )
    flip, offset = tf.constant(False), k
    for op in recipe[1:]:
        if op["op"] == "horizontal_flip":
            flip = tf.math.logical_xor(flip, u[offset] < op["p"])
        offset += op_draws(op)
    return tf.stack([v[0] for v in box]), flip


def _check_single(images: tf.Tensor, what: str) -> None:
    if images.shape[0] != 1:
        raise ValueError(f"{what} runs one image at a time, got a batch of shape {images.shape}.")


def _resize(images, u, *, size, antialias=True):
    del u
    height, width = dims(images, (1, 2))
    if not isinstance(size, int):
        hw = size_pair(size)
    elif isinstance(height, int) and isinstance(width, int):
        long = int(size * max(height, width) / min(height, width))
        hw = (size, long) if height <= width else (long, size)
    else:
        h_f, w_f = tf.cast(height, tf.float64), tf.cast(width, tf.float64)
        long = tf.cast(tf.floor(size * tf.maximum(h_f, w_f) / tf.minimum(h_f, w_f)), tf.int32)
        hw = (tf.where(height <= width, size, long), tf.where(height <= width, long, size))
    if images.shape[0] == 1:
        return _resize_one(images[0], hw, antialias)[None]
    scale = 1.0 / 255.0 if images.dtype == tf.uint8 else 1.0
    out = tf.image.resize(images, tf.stack(hw), method="bilinear", antialias=antialias) * scale
    return tf.ensure_shape(
        out, (images.shape[0], *[d if isinstance(d, int) else None for d in hw], None)
    )


def _center_crop(images, u, *, size):
    del u
    crop_h, crop_w = size_pair(size)
    height, width = dims(images, (1, 2))
    pad_h = tf.maximum(crop_h - height, 0)
    pad_w = tf.maximum(crop_w - width, 0)
    paddings = [[0, 0], [pad_h // 2, (pad_h + 1) // 2], [pad_w // 2, (pad_w + 1) // 2], [0, 0]]
    images = tf.pad(images, paddings)
    top = tf.cast(tf.round(tf.cast(height + pad_h - crop_h, tf.float64) / 2.0), tf.int32)
    left = tf.cast(tf.round(tf.cast(width + pad_w - crop_w, tf.float64) / 2.0), tf.int32)
    out = images[:, top : top + crop_h, left : left + crop_w]
    return tf.ensure_shape(out, (images.shape[0], crop_h, crop_w, images.shape[-1]))


def _horizontal_flip(images, u, *, p):
    return apply_where(u[:, 0] < p, lambda x: tf.reverse(x, axis=[2]), images)


def _jigsaw(images, u, *, grid, patch):
    """The jigsaw mosaic (`recipe_ops.jigsaw_cells`: PIRL / PyContrast `JigsawCrop`)."""
    _, height, width, channels = images.shape
    cell_h, cell_w = jigsaw_cells(height, width, grid, patch)
    cells = grid * grid
    origin = tf.range(cells) // grid, tf.range(cells) % grid
    offsets = []
    for axis, (cell, u_axis) in enumerate(((cell_h, u[:, :cells]), (cell_w, u[:, cells:]))):
        shift = tf.minimum(tf.cast(u_axis * (cell - patch + 1), tf.int32), cell - patch)
        start = origin[axis][None, :] * cell + shift  # [N, cells]
        offsets.append(start[:, :, None] + tf.range(patch)[None, None, :])  # [N, cells, patch]
    rows = tf.reshape(offsets[0], [-1, cells * patch])
    x = tf.gather(images, rows, axis=1, batch_dims=1)  # [N, cells·patch, W, C]
    x = tf.reshape(x, [-1, cells, patch, width, channels])
    x = tf.gather(x, offsets[1], axis=3, batch_dims=2)  # [N, cells, patch, patch, C]
    x = tf.reshape(x, [-1, grid, grid, patch, patch, channels])
    x = tf.transpose(x, [0, 1, 3, 2, 4, 5])
    return tf.reshape(x, [-1, grid * patch, grid * patch, channels])


BATCH_OPS = {
    "random_resized_crop": _random_resized_crop,
    "resize": _resize,
    "center_crop": _center_crop,
    "horizontal_flip": _horizontal_flip,
    "jigsaw": _jigsaw,
}
