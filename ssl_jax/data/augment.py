"""Host-side augmentation ops in TensorFlow with torchvision semantics and stateless randomness.

Per-image API: `op(image, seed, **params)` with `image` float32 `[H, W, C]` in [0, 1] (geometric ops
also take uint8) and `seed` an int `[2]` stateless seed; `apply_recipe(image_uint8, recipe, seed)`
runs a recipe (a sequence of op dicts, see docs/design.md) and returns uint8 (×255, clipped,
rounded).

Every op is implemented once, vectorised over a leading batch axis: `apply_ops(images [N, H, W, C],
recipe, u [N, D])` where row `n` of `u` holds example `n`'s uniforms (`draw(recipe, seed)`: one
`tf.random.stateless_uniform` call per example and view; op k reads its own columns). The per-image
functions are the batch of one, so a view depends only on its image and its seed, not on the batch
it is in (up to float summation order: at most 1/255 on a few pixels). A static batch of one takes
`tf.cond` / `tf.switch_case` branches, so ops that are not drawn cost nothing; a larger batch
partitions it by the ops each example drew.

The input pipeline (`split_point`, `apply_prefix`, `apply_ops_uint8`) augments small fixed-size
sources (≤ `MAX_BATCHED_CROP_PIXELS`: 28-, 32-, 96-px data) after batching, with whole-batch ops
(crop + resize as two batched matmuls with per-example resampling matrices, blur as one depthwise
convolution over N·C channels): per-op overheads, not pixels, dominate at that size. Large or
variable-size images are augmented one at a time before batching, where one image's intermediates
stay in cache; there the crop happens on uint8 before any float conversion, antialiasing runs only
when the crop is downscaled, and trailing flips run after the uint8 quantisation.

torchvision semantics kept:
- `random_resized_crop`: `RandomResizedCrop.get_params` exactly (10 attempts, area uniform in
  scale·area, log-uniform ratio, `round` half to even, centre-crop fallback with the ratio clamped),
  then bilinear resize of the crop (half-pixel centres, edges clamped to the crop). `antialias`
  defaults to True, as torchvision >= 0.17 for tensors and PIL always: a triangle filter widened by
  the downscaling factor, weights normalised inside the crop; it only changes downscaling.
- `resize` (int: shorter side, `int(size * long / short)` for the other; pair: exact `(h, w)`),
  `center_crop` (zero padding when the crop is larger, `round((H - h) / 2)` offsets).
- `color_jitter`: brightness / contrast / saturation factors ~ U[max(0, 1 - x), 1 + x], hue shift
  ~ U[-h, h], applied in a random order (a uniform random permutation, as `randperm(4)`), each
  clamped to [0, 1]; contrast blends with the mean of the grayscale image; hue shifts H in HSV space
  (TF's fused `AdjustHue`, the arithmetic of torchvision's `_rgb2hsv` / `_hsv2rgb`); a component
  given as 0 is skipped. Applied with probability p.
- `grayscale`: ITU-R 601-2 luma (0.299, 0.587, 0.114), written into every channel.
- `gaussian_blur`: sigma ~ U[sigma], kernel `exp(-x² / 2σ²)` normalised over `kernel_size` taps,
  separable, reflect padding (torchvision `GaussianBlur`); `kernel_size` 0 = the odd number nearest
  to 10% of the shorter side (23 at 224 px, 3 at 32 px), at least 3.
- `solarize`: `x → 1 − x` where `x >= threshold` (threshold in [0, 1] pixel units).
- `color_space` (CMC's colour transfer + `Normalize`): RGB → `space` ('lab', 'ycbcr', 'ydbdr'),
  normalised with the official mean/std (`color.py`); float out, not an image in [0, 1], so it must
  be a recipe's last op (`FLOAT_OPS`). The input pipeline leaves it to the device (the view still
  leaves the host as uint8): `device_augment.to_model_input` / `apply_recipe` run it instead of the
  `config.data.mean/std` normalisation. Here it is for `apply_ops` (float out); `apply_recipe` and
  `apply_ops_uint8` refuse it.
- `rand_augment` (not torchvision: timm / PyContrast `rand-n2-m10-mstd0.5`, InfoMin's aug "D"):
  `num_ops` ops drawn uniformly with replacement from `ops` (`randaugment.RAND_TRANSFORMS`, the 15
  of timm, by default), each applied with probability `p`, magnitude ~ N(`magnitude`,
  `magnitude_std`) clipped to [0, 10], geometric ops filled with `fill`; PIL's uint8 arithmetic
  (`randaugment.py`), so the image is quantised to uint8 values on entry. 4 uniforms per drawn op.
Uniforms come from TF's stateless generator, not torch's, so the draws (not their laws) differ.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from ssl_jax.data import color, randaugment
from ssl_jax.data.recipe_ops import (
    FLOAT_OPS,
    LUMA,
    PIXEL_OPS,
    RRC_ATTEMPTS,
    _params,
    num_draws,
    op_draws,
)

# Fixed-size sources up to this many pixels are augmented in batches (crop + resize by resampling
# matrices); larger or variable-size ones image by image (slice + tf.image.resize), before batching.
MAX_BATCHED_CROP_PIXELS = 160 * 160


# --------------------------------------------------------------------------------------------------
# Helpers


def _pair(size: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(size, int):
        return size, size
    h, w = size
    return int(h), int(w)


def to_float(images: tf.Tensor) -> tf.Tensor:
    """uint8 → float32 in [0, 1]; float32 unchanged."""
    if images.dtype == tf.uint8:
        return tf.cast(images, tf.float32) * (1.0 / 255.0)
    return tf.cast(images, tf.float32)


def to_uint8(images: tf.Tensor) -> tf.Tensor:
    """float32 in [0, 1] → uint8 (×255, clipped, rounded); uint8 unchanged."""
    if images.dtype == tf.uint8:
        return images
    return tf.cast(tf.round(tf.clip_by_value(images * 255.0, 0.0, 255.0)), tf.uint8)


def _dims(x: tf.Tensor, axes: Sequence[int]) -> tuple[Any, ...]:
    """Sizes of `axes`: Python ints when static, scalar tensors otherwise."""
    dynamic = tf.shape(x)
    return tuple(x.shape[a] if x.shape[a] is not None else dynamic[a] for a in axes)


def _lerp(u: tf.Tensor, lo: float, hi: float) -> tf.Tensor:
    return lo + (hi - lo) * u


def gray(images: tf.Tensor) -> tf.Tensor:
    """ITU-R 601-2 luma of float `[..., C]` as `[..., 1]`; the image itself when C is 1."""
    if images.shape[-1] == 1:
        return images
    r, g, b = images[..., 0:1], images[..., 1:2], images[..., 2:3]
    return r * LUMA[0] + g * LUMA[1] + b * LUMA[2]


def _needs_colour(images: tf.Tensor, what: str) -> None:
    if images.shape[-1] != 3:
        raise ValueError(f"{what} needs 3-channel images, got shape {images.shape}.")


def _bcast(v: tf.Tensor) -> tf.Tensor:
    """Per-example `[N]` → `[N, 1, 1, 1]`."""
    return tf.reshape(v, [-1, 1, 1, 1])


def _apply_where(mask: tf.Tensor, fn: Callable[[tf.Tensor], tf.Tensor], x: tf.Tensor) -> tf.Tensor:
    """`fn(x[n])` where `mask[n]`, else `x[n]`; one image (static batch of 1) takes a `tf.cond`."""
    if x.shape[0] == 1:
        return tf.ensure_shape(tf.cond(mask[0], lambda: fn(x), lambda: x), x.shape)
    return tf.where(_bcast(mask), fn(x), x)


def _partitioned(
    x: tf.Tensor, group: tf.Tensor, fns: Sequence[Callable[[tf.Tensor, tf.Tensor], tf.Tensor]]
) -> tf.Tensor:
    """Example n gets `fns[group[n]](x[n], its row index)`; group == len(fns) leaves it unchanged.

    Each fn sees only its own examples (so an op not drawn costs nothing and leaves pixels
    bit-exact). A single image (static batch of 1) takes a `tf.switch_case` instead: no copies.
    """
    n = len(fns)
    if x.shape[0] == 1:
        rows = tf.zeros([1], tf.int32)
        branches = [lambda fn=fn: fn(x, rows) for fn in fns] + [lambda: x]
        return tf.ensure_shape(tf.switch_case(group[0], branches), x.shape)
    rows = tf.range(tf.shape(x)[0])
    parts = tf.dynamic_partition(x, group, n + 1)
    part_rows = tf.dynamic_partition(rows, group, n + 1)
    outs = [fn(parts[k], part_rows[k]) for k, fn in enumerate(fns)] + [parts[n]]
    return tf.ensure_shape(tf.dynamic_stitch(part_rows, outs), x.shape)


# --------------------------------------------------------------------------------------------------
# Geometry


def rrc_params(
    u: tf.Tensor, height: Any, width: Any, scale: Sequence[float], ratio: Sequence[float]
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    """`(top, left, h, w)`, each int32 `[N]`, from uniforms `u [N, 22]`, as torchvision's
    `RandomResizedCrop.get_params` for `height × width` images."""
    u = tf.cast(u, tf.float64)
    height_f = tf.cast(height, tf.float64)
    width_f = tf.cast(width, tf.float64)
    area = height_f * width_f
    target_area = area * _lerp(u[:, :RRC_ATTEMPTS], scale[0], scale[1])
    log_ratio = _lerp(u[:, RRC_ATTEMPTS : 2 * RRC_ATTEMPTS], math.log(ratio[0]), math.log(ratio[1]))
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
    out_h, out_w = _pair(size)
    height, width = _dims(images, (1, 2))
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
    params = _params(rrc)
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
    height, width = _dims(images, (1, 2))
    if not isinstance(size, int):
        hw = _pair(size)
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
    crop_h, crop_w = _pair(size)
    height, width = _dims(images, (1, 2))
    pad_h = tf.maximum(crop_h - height, 0)
    pad_w = tf.maximum(crop_w - width, 0)
    paddings = [[0, 0], [pad_h // 2, (pad_h + 1) // 2], [pad_w // 2, (pad_w + 1) // 2], [0, 0]]
    images = tf.pad(images, paddings)
    top = tf.cast(tf.round(tf.cast(height + pad_h - crop_h, tf.float64) / 2.0), tf.int32)
    left = tf.cast(tf.round(tf.cast(width + pad_w - crop_w, tf.float64) / 2.0), tf.int32)
    out = images[:, top : top + crop_h, left : left + crop_w]
    return tf.ensure_shape(out, (images.shape[0], crop_h, crop_w, images.shape[-1]))


def _horizontal_flip(images, u, *, p):
    return _apply_where(u[:, 0] < p, lambda x: tf.reverse(x, axis=[2]), images)


# --------------------------------------------------------------------------------------------------
# Colour


def _per_image(x: tf.Tensor, factor: Any) -> tf.Tensor:
    """A factor per image: `[N] → [N, 1, 1, 1]` for a batch `[N, H, W, C]`, a scalar for `[H, W,
    C]`."""
    factor = tf.cast(factor, tf.float32)
    batched = x.shape.rank == 4 and x.shape[0] != 1  # a scalar takes Eigen's faster path
    return tf.reshape(factor, [-1, 1, 1, 1] if batched else [])


# The adjustments take one image `[H, W, C]` with a scalar factor, or a batch `[N, H, W, C]` with
# one factor per image `[N]`.


def adjust_brightness(x: tf.Tensor, factor: Any) -> tf.Tensor:
    """`clamp(f · x)` (torchvision `adjust_brightness`)."""
    x = tf.convert_to_tensor(x, tf.float32)
    return tf.clip_by_value(x * _per_image(x, factor), 0.0, 1.0)


def adjust_contrast(x: tf.Tensor, factor: Any) -> tf.Tensor:
    """Blend with the mean of the grayscale image: `clamp(f · x + (1 − f) · mean)`."""
    x = tf.convert_to_tensor(x, tf.float32)
    mean = gray(tf.reduce_mean(x, axis=[-3, -2], keepdims=True))  # mean of gray = gray of mean
    f = _per_image(x, factor)
    if f.shape.rank == 0:
        mean = tf.reshape(mean, [])
    return tf.clip_by_value(f * x + (1.0 - f) * mean, 0.0, 1.0)


def adjust_saturation(x: tf.Tensor, factor: Any) -> tf.Tensor:
    """Blend with the grayscale image: `clamp(f · x + (1 − f) · gray)`."""
    x = tf.convert_to_tensor(x, tf.float32)
    _needs_colour(x, "saturation")
    f = _per_image(x, factor)
    return tf.clip_by_value(f * x + (1.0 - f) * gray(x), 0.0, 1.0)


def adjust_hue(x: tf.Tensor, delta: Any) -> tf.Tensor:
    """Shift the HSV hue by `delta` turns (torchvision `adjust_hue`).

    TF's fused `AdjustHue` kernel does the same RGB → HSV → RGB arithmetic as torchvision's
    `_rgb2hsv` / `_hsv2rgb` in one pass; it takes one delta, hence one call per image of a batch."""
    x = tf.convert_to_tensor(x, tf.float32)
    _needs_colour(x, "hue")
    delta = tf.cast(delta, tf.float32)
    if x.shape.rank == 3 or x.shape[0] == 1:
        out = tf.image.adjust_hue(x, tf.reshape(delta, []))
    else:
        out = tf.map_fn(
            lambda args: tf.image.adjust_hue(args[0], args[1]),
            (x, delta),
            fn_output_signature=tf.TensorSpec(x.shape[1:], tf.float32),
        )
    return tf.clip_by_value(out, 0.0, 1.0)


def color_jitter_params(
    u: tf.Tensor, brightness: float, contrast: float, saturation: float, hue: float
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """From `u [N, 9]`: `(apply_uniform [N], factors [N, 4], order [N, 4])`, factors of (brightness,
    contrast, saturation, hue) as `ColorJitter.get_params`, order a uniform permutation of 0..3."""
    factors = [
        _lerp(u[:, 1 + k], max(0.0, 1.0 - a), 1.0 + a)
        for k, a in enumerate((brightness, contrast, saturation))
    ]
    factors.append(_lerp(u[:, 4], -hue, hue))
    order = tf.cast(tf.argsort(u[:, 5:9], axis=1), tf.int32)
    return u[:, 0], tf.stack(factors, axis=1), order


def _color_jitter(images, u, *, p, brightness=0.0, contrast=0.0, saturation=0.0, hue=0.0):
    x = to_float(images)
    apply_u, factors, order = color_jitter_params(u, brightness, contrast, saturation, hue)
    amounts = (brightness, contrast, saturation, hue)
    fns = (adjust_brightness, adjust_contrast, adjust_saturation, adjust_hue)
    branches = [
        (lambda part, rows, fn=fn, k=k: fn(part, tf.gather(factors[:, k], rows)))
        if amount
        else (lambda part, rows: part)  # never selected; not built (1-channel images)
        for k, (fn, amount) in enumerate(zip(fns, amounts))
    ]
    applied = apply_u < p
    active = tf.constant([bool(a) for a in amounts])

    if x.shape[0] == 1:  # one image: skip everything when not applied, 4 switch_cases otherwise

        def jitter():
            y = x
            for position in range(4):
                group = order[:, position]
                y = _partitioned(y, tf.where(tf.gather(active, group), group, 4), branches)
            return y

        return tf.ensure_shape(tf.cond(applied[0], jitter, lambda: x), x.shape)

    def step(position, x):  # a loop, not 4 unrolled copies: a 4× smaller graph to trace
        group = tf.gather(order, position, axis=1)
        skip = ~applied | ~tf.gather(active, group)
        return position + 1, _partitioned(x, tf.where(skip, 4, group), branches)

    _, x = tf.while_loop(lambda position, x: position < 4, step, (0, x), maximum_iterations=4)
    return x


def _grayscale(images, u, *, p):
    _needs_colour(images, "grayscale")
    x = to_float(images)
    channels = x.shape[-1]
    return _partitioned(
        x,
        tf.where(u[:, 0] < p, 0, 1),
        [lambda part, rows: tf.tile(gray(part), [1, 1, 1, channels])],
    )


# --------------------------------------------------------------------------------------------------
# Filters


def blur_kernel_size(side: int) -> int:
    """Odd number nearest to 10% of `side`, at least 3."""
    return max(3, 2 * round((0.1 * side - 1) / 2) + 1)


def gaussian_kernel1d(sigma: tf.Tensor, kernel_size: int) -> tf.Tensor:
    """torchvision `_get_gaussian_kernel1d` for each sigma `[N]`: `[N, kernel_size]`, rows sum to
    1."""
    half = (kernel_size - 1) * 0.5
    x = tf.linspace(-half, half, kernel_size)[None, :]
    kernel = tf.exp(-0.5 * tf.square(x / tf.reshape(tf.cast(sigma, tf.float32), [-1, 1])))
    return kernel / tf.reduce_sum(kernel, axis=1, keepdims=True)


def blur(x: tf.Tensor, kernels: tf.Tensor) -> tf.Tensor:
    """Separable blur of float `[N, H, W, C]` with per-example kernels `[N, k]`, reflect padding.

    TF's CPU depthwise convolution vectorises over channels, and 3 channels leave most of each
    vector empty. So a batch is folded into the channel axis (`[1, H, W, N·C]`, one convolution per
    pass for the whole batch), and a single image is laid out as `[1, H, 1, W·C]` for the vertical
    pass and `[1, W, 1, H·C]` for the horizontal one (25% faster than `[1, H, W, C]` at 224 px)."""
    n, height, width = _dims(x, (0, 1, 2))
    channels = x.shape[3]
    k = kernels.shape[1]
    r = k // 2
    x = tf.pad(x, [[0, 0], [r, r], [r, r], [0, 0]], mode="REFLECT")
    if x.shape[0] == 1:
        taps = tf.reshape(kernels, [k, 1, 1, 1])
        wide = (width + 2 * r) * channels
        y = tf.reshape(x, [1, height + 2 * r, 1, wide])
        y = tf.nn.depthwise_conv2d(y, tf.tile(taps, [1, 1, wide, 1]), [1, 1, 1, 1], "VALID")
        y = tf.transpose(tf.reshape(y, [height, width + 2 * r, channels]), [1, 0, 2])
        y = tf.reshape(y, [1, width + 2 * r, 1, height * channels])
        taps = tf.tile(taps, [1, 1, height * channels, 1])
        y = tf.nn.depthwise_conv2d(y, taps, [1, 1, 1, 1], "VALID")
        return tf.transpose(tf.reshape(y, [width, height, channels]), [1, 0, 2])[None]
    x = tf.transpose(x, [1, 2, 0, 3])  # [H + 2r, W + 2r, N, C]
    x = tf.reshape(x, [1, height + 2 * r, width + 2 * r, n * channels])
    taps = tf.transpose(tf.repeat(kernels, channels, axis=0))  # [k, N·C]
    x = tf.nn.depthwise_conv2d(x, tf.reshape(taps, [k, 1, -1, 1]), [1, 1, 1, 1], "VALID")
    x = tf.nn.depthwise_conv2d(x, tf.reshape(taps, [1, k, -1, 1]), [1, 1, 1, 1], "VALID")
    x = tf.reshape(x, [height, width, n, channels])
    return tf.transpose(x, [2, 0, 1, 3])


def _gaussian_blur(images, u, *, p, sigma, kernel_size=0):
    x = to_float(images)
    height, width = x.shape[1:3]
    if not kernel_size:
        if height is None or width is None:
            raise ValueError(
                "gaussian_blur with kernel_size 0 needs a fixed image size: "
                "put it after a crop or resize, or give kernel_size."
            )
        kernel_size = blur_kernel_size(min(height, width))
    sigmas = _lerp(u[:, 1], sigma[0], sigma[1])

    def blur_part(part, rows):  # MirrorPad and the convolution reject an empty batch
        if part.shape[0] == 1:
            return blur(part, gaussian_kernel1d(tf.gather(sigmas, rows), kernel_size))
        return tf.cond(
            tf.size(rows) > 0,
            lambda: blur(part, gaussian_kernel1d(tf.gather(sigmas, rows), kernel_size)),
            lambda: part,
        )

    return _partitioned(x, tf.where(u[:, 0] < p, 0, 1), [blur_part])


def _solarize(images, u, *, p, threshold):
    x = to_float(images)
    return tf.where(_bcast(u[:, 0] < p) & (x >= threshold), 1.0 - x, x)


def _rand_augment(
    images,
    u,
    *,
    num_ops=2,
    magnitude=10.0,
    magnitude_std=0.5,
    p=0.5,
    ops=None,
    fill=randaugment.IMAGENET_FILL,
    increasing=False,
):
    names = tuple(ops) if ops is not None else randaugment.RAND_TRANSFORMS
    index, applied, mags, signs = randaugment.op_params(
        u, num_ops, len(names), magnitude, magnitude_std, p
    )
    fill_c = randaugment.fill_value(fill, images.shape[-1])
    x = tf.cast(to_uint8(images), tf.float32)
    for layer in range(num_ops):
        m, s = mags[:, layer], signs[:, layer]
        branches = [
            lambda part, rows, op=randaugment.OPS[name], m=m, s=s: op(
                part, tf.gather(m, rows), tf.gather(s, rows), fill_c, increasing
            )
            for name in names
        ]
        x = _partitioned(x, tf.where(applied[:, layer], index[:, layer], len(names)), branches)
    return to_float(tf.cast(x, tf.uint8))


def _jigsaw(images, u, *, grid, patch):
    """PIRL / PyContrast `JigsawCrop`: the image cut into `grid × grid` cells of `side // grid`
    px (85 at 255), one `patch × patch` crop at a uniform integer offset in each cell
    (`randint(0, cell − patch + 1)` per axis), laid out as a `[grid·patch, grid·patch, C]` mosaic,
    cell (i, j) at block (i, j): the model cuts it back into `grid²` patches. u `[N, 2·grid²]`:
    row offsets, then column offsets, cell by cell in row-major order."""
    _, height, width, channels = images.shape
    cell_h, cell_w = height // grid, width // grid
    if patch > min(cell_h, cell_w):
        raise ValueError(
            f"jigsaw: patch={patch} is larger than the {cell_h}×{cell_w} cells of a "
            f"{height}×{width} image in a {grid}×{grid} grid."
        )
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


def _color_space(images, u, *, space):
    del u
    _needs_colour(images, "color_space")
    return color.convert_tf(to_float(images), space)


BATCH_OPS: dict[str, Callable[..., tf.Tensor]] = {
    "random_resized_crop": _random_resized_crop,
    "resize": _resize,
    "center_crop": _center_crop,
    "horizontal_flip": _horizontal_flip,
    "color_jitter": _color_jitter,
    "grayscale": _grayscale,
    "gaussian_blur": _gaussian_blur,
    "solarize": _solarize,
    "color_space": _color_space,
    "rand_augment": _rand_augment,
    "jigsaw": _jigsaw,
}


# --------------------------------------------------------------------------------------------------
# Per-image ops


def _single(name: str) -> Callable[..., tf.Tensor]:
    def op(image: tf.Tensor, seed: tf.Tensor, **params: Any) -> tf.Tensor:
        k = op_draws({"op": name, **params})
        u = tf.random.stateless_uniform([1, k], tf.cast(seed, tf.int64))
        return BATCH_OPS[name](image[None], u, **params)[0]

    op.__name__ = name
    op.__doc__ = f"`{name}` on one image `[H, W, C]` with stateless `seed` (see the module doc)."
    return op


random_resized_crop = _single("random_resized_crop")
resize = _single("resize")
center_crop = _single("center_crop")
horizontal_flip = _single("horizontal_flip")
color_jitter = _single("color_jitter")
grayscale = _single("grayscale")
gaussian_blur = _single("gaussian_blur")
solarize = _single("solarize")
color_space = _single("color_space")
rand_augment = _single("rand_augment")
jigsaw = _single("jigsaw")


# --------------------------------------------------------------------------------------------------
# Recipes


def draw(recipe: Sequence[Mapping[str, Any]], seed: tf.Tensor) -> tf.Tensor:
    """The `[num_draws(recipe)]` float32 uniforms of one example, from one stateless seed."""
    return tf.random.stateless_uniform([max(num_draws(recipe), 1)], tf.cast(seed, tf.int64))


def split_point(recipe: Sequence[Mapping[str, Any]], image_shape: Sequence[int | None]) -> int:
    """Ops to run one image at a time before batching: none when the source images have a fixed,
    small size (then per-op overheads dominate and whole-batch ops win), all of them otherwise
    (large images: one image's intermediates stay in cache, a batch's do not)."""
    height, width = image_shape[:2]
    if height is not None and width is not None and height * width <= MAX_BATCHED_CROP_PIXELS:
        return 0
    return len(recipe)


def apply_ops(
    images: tf.Tensor,
    recipe: Sequence[Mapping[str, Any]],
    u: tf.Tensor,
    start: int = 0,
    stop: int | None = None,
) -> tf.Tensor:
    """Ops `recipe[start:stop]` on `images [N, H, W, C]` with per-example uniforms `u [N, D]`
    (`D = num_draws(recipe)`; op k reads its own columns). Returns float32 (uint8 if no op
    converted)."""
    stop = len(recipe) if stop is None else stop
    offset = sum(op_draws(op) for op in recipe[:start])
    x = images
    for op in recipe[start:stop]:
        k = op_draws(op)
        x = BATCH_OPS[op["op"]](x, u[:, offset : offset + k], **_params(op))
        offset += k
    return x


def apply_ops_uint8(
    images: tf.Tensor, recipe: Sequence[Mapping[str, Any]], u: tf.Tensor, start: int = 0
) -> tf.Tensor:
    """`apply_ops(images, recipe, u, start)` quantised to uint8; trailing flips / centre crops run
    after the (exactly commuting) quantisation. A `FLOAT_OPS` op (float out) raises ValueError."""
    floats = [op["op"] for op in recipe[start:] if op["op"] in FLOAT_OPS]
    if floats:
        raise ValueError(
            f"{floats[0]} gives float views, not uint8: run it with apply_ops, or on the device "
            "(device_augment.to_model_input), as the input pipeline does."
        )
    stop = len(recipe)
    while stop > start and recipe[stop - 1]["op"] in PIXEL_OPS:
        stop -= 1
    x = to_uint8(apply_ops(images, recipe, u, start, stop))
    return apply_ops(x, recipe, u, stop)


def apply_prefix(
    image: tf.Tensor, recipe: Sequence[Mapping[str, Any]], u: tf.Tensor, split: int
) -> tf.Tensor:
    """The per-example stage of the input pipeline: ops `recipe[:split]` on one image `[H, W, C]`
    with its uniforms `u [D]`; quantised to uint8 when that is the whole recipe."""
    if split == len(recipe):
        return apply_ops_uint8(image[None], recipe, u[None])[0]
    if split:
        return apply_ops(image[None], recipe, u[None], 0, split)[0]
    return image


def apply_recipe(
    image: tf.Tensor, recipe: Sequence[Mapping[str, Any]], seed: tf.Tensor
) -> tf.Tensor:
    """uint8 `[H, W, C]` → uint8 view, randomness from `draw(recipe, seed)`."""
    return apply_ops_uint8(image[None], recipe, draw(recipe, seed)[None])[0]
