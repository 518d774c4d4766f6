"""The host's colour ops and filters (TensorFlow): colour jitter, grayscale, Gaussian blur,
solarize and the colour-space transfer, as batch ops `op(images [N, H, W, C], u [N, op_draws(op)],
**params)` (`BATCH_OPS`) with torchvision's semantics (`augment.py`'s doc lists them).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from ssl_jax.data.host.color_spaces import convert_tf
from ssl_jax.data.host.tensors import bcast, dims, gray, lerp, needs_colour, partitioned, to_float
from ssl_jax.data.recipe_ops import blur_kernel_size


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
    needs_colour(x, "saturation")
    f = _per_image(x, factor)
    return tf.clip_by_value(f * x + (1.0 - f) * gray(x), 0.0, 1.0)


def adjust_hue(x: tf.Tensor, delta: Any) -> tf.Tensor:
    """Shift the HSV hue by `delta` turns (torchvision `adjust_hue`).

    TF's fused `AdjustHue` kernel does the same RGB → HSV → RGB arithmetic as torchvision's
    `_rgb2hsv` / `_hsv2rgb` in one pass; it takes one delta, hence one call per image of a batch."""
    x = tf.convert_to_tensor(x, tf.float32)
    needs_colour(x, "hue")
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
        lerp(u[:, 1 + k], max(0.0, 1.0 - a), 1.0 + a)
        for k, a in enumerate((brightness, contrast, saturation))
    ]
    factors.append(lerp(u[:, 4], -hue, hue))
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
                y = partitioned(y, tf.where(tf.gather(active, group), group, 4), branches)
            return y

        return tf.ensure_shape(tf.cond(applied[0], jitter, lambda: x), x.shape)

    def step(position, x):  # a loop, not 4 unrolled copies: a 4× smaller graph to trace
        group = tf.gather(order, position, axis=1)
        skip = ~applied | ~tf.gather(active, group)
        return position + 1, partitioned(x, tf.where(skip, 4, group), branches)

    _, x = tf.while_loop(lambda position, x: position < 4, step, (0, x), maximum_iterations=4)
    return x


def _grayscale(images, u, *, p):
    needs_colour(images, "grayscale")
    x = to_float(images)
    channels = x.shape[-1]
    return partitioned(
        x,
        tf.where(u[:, 0] < p, 0, 1),
        [lambda part, rows: tf.tile(gray(part), [1, 1, 1, channels])],
    )


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
    pass and `[1, W, 1, H·C]` for the horizontal one (docs/performance.md, "Input pipeline")."""
    n, height, width = dims(x, (0, 1, 2))
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
    sigmas = lerp(u[:, 1], sigma[0], sigma[1])

    def blur_part(part, rows):  # MirrorPad and the convolution reject an empty batch
        if part.shape[0] == 1:
            return blur(part, gaussian_kernel1d(tf.gather(sigmas, rows), kernel_size))
        return tf.cond(
            tf.size(rows) > 0,
            lambda: blur(part, gaussian_kernel1d(tf.gather(sigmas, rows), kernel_size)),
            lambda: part,
        )

    return partitioned(x, tf.where(u[:, 0] < p, 0, 1), [blur_part])


def _solarize(images, u, *, p, threshold):
    x = to_float(images)
    return tf.where(bcast(u[:, 0] < p) & (x >= threshold), 1.0 - x, x)


def _color_space(images, u, *, space):
    del u
    needs_colour(images, "color_space")
    return convert_tf(to_float(images), space)


BATCH_OPS = {
    "color_jitter": _color_jitter,
    "grayscale": _grayscale,
    "gaussian_blur": _gaussian_blur,
    "solarize": _solarize,
    "color_space": _color_space,
}
