"""The recipe on the host (TensorFlow): the batch ops of `geometry`, `colour` and `randaugment` in
one table (`BATCH_OPS`), their per-image forms, the uniforms of a view and how the input pipeline
runs a recipe; torchvision semantics, stateless randomness.

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
  normalised with the official mean/std (`data/color.py`); float out, not an image in [0, 1], so it
  must be a recipe's last op (`FLOAT_OPS`). The input pipeline leaves it to the device (the view
  still leaves the host as uint8): `device/recipe.to_model_input` / `apply_recipe` run it instead
  of the `config.data.mean/std` normalisation. Here it is for `apply_ops` (float out); `apply_recipe` and
  `apply_ops_uint8` refuse it.
- `rand_augment` (not torchvision: timm / PyContrast `rand-n2-m10-mstd0.5`, InfoMin's aug "D"):
  `num_ops` ops drawn uniformly with replacement from `ops` (`recipe_ops.RAND_TRANSFORMS`, the 15
  of timm, by default), each applied with probability `p`, magnitude ~ N(`magnitude`,
  `magnitude_std`) clipped to [0, 10], geometric ops filled with `fill`; PIL's uint8 arithmetic
  (`randaugment.py`), so the image is quantised to uint8 values on entry. 4 uniforms per drawn op.
Uniforms come from TF's stateless generator, not torch's, so the draws (not their laws) differ.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from ssl_jax.data.host import colour, geometry, randaugment
from ssl_jax.data.host.geometry import MAX_BATCHED_CROP_PIXELS
from ssl_jax.data.host.tensors import to_uint8
from ssl_jax.data.recipe_ops import (
    FLOAT_OPS,
    PIXEL_OPS,
    in_table_order,
    num_draws,
    op_draws,
    op_kwargs,
)

# op → `fn(images [N, H, W, C], u [N, op_draws(op)], **params)`, in the op table's order
BATCH_OPS: dict[str, Callable[..., tf.Tensor]] = in_table_order(
    {**geometry.BATCH_OPS, **colour.BATCH_OPS, **randaugment.BATCH_OPS}
)


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
        x = BATCH_OPS[op["op"]](x, u[:, offset : offset + k], **op_kwargs(op))
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
            "(device/recipe.to_model_input), as the input pipeline does."
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
