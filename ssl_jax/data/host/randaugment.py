"""RandAugment ops in TensorFlow with PIL's uint8 arithmetic (timm / PyContrast `RandAugment.py`):
the host twin of `device/randaugment.py`; both read the op table `recipe_ops.RAND_AUGMENT`.

InfoMin's augmentation "D" ends with `rand_augment_transform('rand-n2-m10-mstd0.5')` from
PyContrast's copy of timm's `auto_augment.py` (2020): `num_ops` ops drawn uniformly with replacement
from `RAND_TRANSFORMS`, each applied with probability `p`, its magnitude ~ N(m, mstd) clipped to
[0, 10] (drawn per op), geometric ops filled with the ImageNet mean `(124, 116, 104)`.

Each op here takes a batch `[N, H, W, C]` of float32 holding integers in [0, 255] (a uint8 image,
as PIL sees it) with per-example magnitudes `m [N]` (float64) and signs `[N]` (±1), and returns the
same layout; every result is quantised as PIL quantises it, so point ops match PIL exactly and
geometric ops to rounding (see tests/data/host/test_randaugment.py for the measured differences).
Level → argument (PyContrast / timm at the time, `_MAX_LEVEL` 10):
- Rotate `±30·m/10` degrees, ShearX/Y `±0.3·m/10`, TranslateX/YRel `±0.45·m/10` of the width /
  height (the sign drawn with probability 1/2): PIL `Image.rotate` / `Image.transform(AFFINE)`,
  bilinear only (timm draws bilinear or bicubic at random), fill `fill`.
- PosterizeTpu keeps `int(4·m/10)` bits (0 bits: black); Solarize inverts pixels `>= int(256·m/10)`
  (identity at m = 10, as in timm's original table); SolarizeAdd adds `int(110·m/10)` to pixels
  `< 128` (clipped at 255).
- Color / Contrast / Brightness / Sharpness: `ImageEnhance` with factor `1.8·m/10 + 0.1`
  (in [0.1, 1.9], no sign).
- AutoContrast, Equalize, Invert, Identity: no magnitude.
`increasing=True` takes timm's later "increasing" table instead (`_RAND_INCREASING_TRANSFORMS`):
enhance factor `max(0.1, 1 ± 0.9·m/10)` with a random sign, Solarize threshold
`256 − int(256·m/10)`, Posterize `4 − int(4·m/10)` bits.

One-channel images: Color is the identity (PIL's `Color` on an "L" image), Contrast uses the
image's own mean, and a 3-value `fill` becomes its rounded ITU-R 601-2 luma (117 for the ImageNet
mean).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from ssl_jax.data import recipe_ops
from ssl_jax.data.host.tensors import partitioned, to_float, to_uint8

Op = Callable[[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor, bool], tf.Tensor]


# --------------------------------------------------------------------------------------------------
# PIL helpers (float32 holding uint8 values)


def _b(v: tf.Tensor, dtype=tf.float32) -> tf.Tensor:
    """Per-example `[N]` → `[N, 1, 1, 1]`."""
    return tf.reshape(tf.cast(v, dtype), [-1, 1, 1, 1])


def _luma_pil(x: tf.Tensor) -> tf.Tensor:
    """PIL's `convert('L')`: `(19595 R + 38470 G + 7471 B + 2^15) >> 16`, `[..., 1]`."""
    if x.shape[-1] == 1:
        return x
    q = tf.cast(x, tf.int32)
    y = (q[..., 0:1] * 19595 + q[..., 1:2] * 38470 + q[..., 2:3] * 7471 + 32768) // 65536
    return tf.cast(y, tf.float32)


def blend(degenerate: tf.Tensor, x: tf.Tensor, factor: tf.Tensor) -> tf.Tensor:
    """PIL `Image.blend(degenerate, x, factor)`: `deg + f·(x − deg)` in float32, truncated and
    clipped to [0, 255]; `factor [N]`."""
    f = _b(tf.cast(factor, tf.float32))
    return tf.clip_by_value(tf.floor(degenerate + f * (x - degenerate)), 0.0, 255.0)


def fill_value(fill: int | Sequence[int], channels: int) -> tf.Tensor:
    """`fill` as `[C]` float32 (`recipe_ops.fill_values`)."""
    return tf.constant(recipe_ops.fill_values(fill, channels), tf.float32)


def affine(x: tf.Tensor, coeffs: tf.Tensor, fill: tf.Tensor) -> tf.Tensor:
    """PIL `Image.transform(size, AFFINE, coeffs, BILINEAR, fillcolor=fill)` per example.

    `coeffs [N, 6]` (float64) map output pixel centres `(x + .5, y + .5)` to input coordinates
    `(a x + b y + c, d x + e y + f)`; a point outside `[0, W) × [0, H)` takes `fill`, one inside is
    bilinear with edge-clamped neighbours (PIL `Geometry.c`), rounded half up."""
    n, height, width = (tf.shape(x)[k] for k in range(3))
    channels = x.shape[-1]
    h_f, w_f = tf.cast(height, tf.float64), tf.cast(width, tf.float64)
    ys = (tf.range(h_f, dtype=tf.float64) + 0.5)[None, :, None]
    xs = (tf.range(w_f, dtype=tf.float64) + 0.5)[None, None, :]
    c = [coeffs[:, k][:, None, None] for k in range(6)]
    xin = c[0] * xs + c[1] * ys + c[2]
    yin = c[3] * xs + c[4] * ys + c[5]
    valid = (xin >= 0.0) & (xin < w_f) & (yin >= 0.0) & (yin < h_f)
    xin, yin = xin - 0.5, yin - 0.5
    x0, y0 = tf.floor(xin), tf.floor(yin)
    dx, dy = (xin - x0)[..., None], (yin - y0)[..., None]

    def clamp(v, size):
        return tf.clip_by_value(tf.cast(v, tf.int32), 0, size - 1)

    xa, xb = clamp(x0, width), clamp(x0 + 1.0, width)
    ya, yb = clamp(y0, height), clamp(y0 + 1.0, height)
    flat = tf.reshape(tf.cast(x, tf.float64), [n, -1, channels])

    def at(yy, xx):
        return tf.gather(flat, yy * width + xx, batch_dims=1)

    top = at(ya, xa) + (at(ya, xb) - at(ya, xa)) * dx
    bottom = at(yb, xa) + (at(yb, xb) - at(yb, xa)) * dx
    value = tf.cast(tf.floor(top + (bottom - top) * dy), tf.float32)
    return tf.where(valid[..., None], value, fill)


# --------------------------------------------------------------------------------------------------
# Level → argument (timm `*_level_to_arg`, PyContrast's copy)


def _level(m: tf.Tensor, scale: float) -> tf.Tensor:
    return m / recipe_ops.MAX_LEVEL * scale


def enhance_factor(m: tf.Tensor, sign: tf.Tensor, increasing: bool) -> tf.Tensor:
    """`ImageEnhance`'s factor at level `m` (`recipe_ops.ENHANCE_SCALE`)."""
    if increasing:
        return tf.maximum(
            recipe_ops.ENHANCE_BASE, 1.0 + sign * _level(m, recipe_ops.ENHANCE_INCREASING)
        )
    return _level(m, recipe_ops.ENHANCE_SCALE) + recipe_ops.ENHANCE_BASE


# --------------------------------------------------------------------------------------------------
# The ops: `op(x [N, H, W, C], m [N] float64, sign [N] float64, fill [C], increasing)`


def identity(x, m, sign, fill, increasing):
    return x


def auto_contrast(x, m, sign, fill, increasing):
    """`ImageOps.autocontrast`: per channel, `int(v · 255/(hi − lo) − lo · 255/(hi − lo))`."""
    v = tf.cast(x, tf.float64)
    lo = tf.reduce_min(v, axis=[1, 2], keepdims=True)
    hi = tf.reduce_max(v, axis=[1, 2], keepdims=True)
    scale = 255.0 / tf.where(hi > lo, hi - lo, 1.0)
    out = tf.clip_by_value(tf.floor(v * scale + (-lo * scale)), 0.0, 255.0)
    return tf.cast(tf.where(hi > lo, out, v), tf.float32)


def equalize(x, m, sign, fill, increasing):
    """`ImageOps.equalize`: per channel, `lut[i] = (step // 2 + #pixels < i) // step` with
    `step = (#pixels − #pixels at the top value) // 255` (identity when 0)."""
    n, height, width = (tf.shape(x)[k] for k in range(3))
    channels = x.shape[-1]
    q = tf.cast(x, tf.int32)
    plane = tf.reshape(tf.range(n * channels), [n, 1, 1, channels]) * 256
    hist = tf.math.bincount(
        tf.reshape(q + plane, [-1]), minlength=n * channels * 256, maxlength=n * channels * 256
    )
    hist = tf.reshape(hist, [n, channels, 256])
    top = tf.reduce_max(tf.reshape(tf.transpose(q, [0, 3, 1, 2]), [n, channels, -1]), axis=-1)
    step = (height * width - tf.gather(hist, top, batch_dims=2)) // 255  # [N, C]
    before = tf.cumsum(hist, axis=-1, exclusive=True)
    safe = tf.maximum(step, 1)[..., None]
    lut = tf.minimum((step[..., None] // 2 + before) // safe, 255)
    lut = tf.where(step[..., None] > 0, lut, tf.range(256)[None, None])  # [N, C, 256]
    out = tf.gather(lut, tf.transpose(q, [0, 3, 1, 2]), batch_dims=2)  # [N, C, H, W]
    return tf.cast(tf.transpose(out, [0, 2, 3, 1]), tf.float32)


def invert(x, m, sign, fill, increasing):
    return 255.0 - x


def posterize(x, m, sign, fill, increasing):
    """`ImageOps.posterize(int(4·m/10))` (PosterizeTpu): keep the top bits, 0 bits = black."""
    scale = recipe_ops.RAND_AUGMENT["PosterizeTpu"].scale
    bits = tf.floor(_level(m, scale))
    if increasing:
        bits = scale - bits
    shift = _b(tf.pow(2.0, 8.0 - tf.cast(bits, tf.float32)))
    return tf.floor(x / shift) * shift


def solarize(x, m, sign, fill, increasing):
    """`ImageOps.solarize(threshold = int(256·m/10))`: `255 − v` where `v >= threshold`."""
    scale = recipe_ops.RAND_AUGMENT["Solarize"].scale
    threshold = tf.floor(_level(m, scale))
    if increasing:
        threshold = scale - threshold
    return tf.where(x >= _b(threshold), 255.0 - x, x)


def solarize_add(x, m, sign, fill, increasing):
    """timm `solarize_add(add = int(110·m/10), thresh=128)`: `min(255, v + add)` where `v < 128`."""
    add = _b(tf.floor(_level(m, recipe_ops.RAND_AUGMENT["SolarizeAdd"].scale)))
    return tf.where(x < 128.0, tf.minimum(255.0, x + add), x)


def color(x, m, sign, fill, increasing):
    """`ImageEnhance.Color`: blend with PIL's luma image; identity on 1 channel."""
    if x.shape[-1] == 1:
        return x
    return blend(_luma_pil(x), x, enhance_factor(m, sign, increasing))


def contrast(x, m, sign, fill, increasing):
    """`ImageEnhance.Contrast`: blend with the constant `int(mean(luma) + 0.5)`."""
    luma = tf.cast(_luma_pil(x), tf.float64)
    mean = tf.floor(tf.reduce_mean(luma, axis=[1, 2, 3], keepdims=True) + 0.5)
    return blend(tf.cast(mean, tf.float32), x, enhance_factor(m, sign, increasing))


def brightness(x, m, sign, fill, increasing):
    """`ImageEnhance.Brightness`: blend with black."""
    return blend(tf.zeros_like(x), x, enhance_factor(m, sign, increasing))


def smooth(x: tf.Tensor) -> tf.Tensor:
    """PIL `ImageFilter.SMOOTH` (3×3, centre 5, others 1, /13, rounded); border pixels kept."""
    box = tf.nn.avg_pool2d(x, 3, 1, "VALID") * 9.0  # 3×3 sums of integers: exact
    inner = tf.floor((box + 4.0 * x[:, 1:-1, 1:-1]) / 13.0 + 0.5)
    padded = tf.pad(inner, [[0, 0], [1, 1], [1, 1], [0, 0]])
    height, width = tf.shape(x)[1], tf.shape(x)[2]
    border = tf.pad(
        tf.ones([height - 2, width - 2], tf.bool), [[1, 1], [1, 1]], constant_values=False
    )
    return tf.where(border[None, :, :, None], padded, x)


def sharpness(x, m, sign, fill, increasing):
    """`ImageEnhance.Sharpness`: blend with `smooth(x)`."""
    return blend(smooth(x), x, enhance_factor(m, sign, increasing))


def rotate(x, m, sign, fill, increasing):
    """`Image.rotate(±30·m/10 degrees, BILINEAR, fillcolor=fill)`: counter-clockwise about
    `(W/2, H/2)`."""
    theta = -(sign * _level(m, recipe_ops.RAND_AUGMENT["Rotate"].scale)) * (math.pi / 180.0)
    cos, sin = tf.cos(theta), tf.sin(theta)
    cx = tf.cast(tf.shape(x)[2], tf.float64) / 2.0
    cy = tf.cast(tf.shape(x)[1], tf.float64) / 2.0
    c = cos * -cx + sin * -cy + cx
    f = -sin * -cx + cos * -cy + cy
    return affine(x, tf.stack([cos, sin, c, -sin, cos, f], axis=1), fill)


def _affine_op(name: str, coeffs: Callable[[float, tf.Tensor, tf.Tensor], list[Any]]) -> Op:
    """The op `name` as `Image.transform(AFFINE, coeffs(a, size, one))`, `a` its signed argument
    (`RAND_AUGMENT[name].scale · ±m/10`); None: 0."""
    scale = recipe_ops.RAND_AUGMENT[name].scale

    def op(x, m, sign, fill, increasing):
        one, zero = tf.ones_like(m), tf.zeros_like(m)
        size = tf.cast(tf.shape(x)[1:3], tf.float64)
        a = coeffs(scale * (sign * m / recipe_ops.MAX_LEVEL), size, one)
        return affine(x, tf.stack([zero + v if v is not None else zero for v in a], axis=1), fill)

    op.__name__ = name
    return op


shear_x = _affine_op("ShearX", lambda a, size, one: [one, a, None, None, one, None])
shear_y = _affine_op("ShearY", lambda a, size, one: [one, None, None, a, one, None])
translate_x_rel = _affine_op(
    "TranslateXRel", lambda a, size, one: [one, None, a * size[1], None, one, None]
)
translate_y_rel = _affine_op(
    "TranslateYRel", lambda a, size, one: [one, None, None, None, one, a * size[0]]
)
shear_x.__doc__ = "`Image.transform(AFFINE, (1, ±0.3·m/10, 0, 0, 1, 0))`."
shear_y.__doc__ = "`Image.transform(AFFINE, (1, 0, 0, ±0.3·m/10, 1, 0))`."
translate_x_rel.__doc__ = "`Image.transform(AFFINE, (1, 0, ±0.45·m/10·W, 0, 1, 0))`."
translate_y_rel.__doc__ = "`Image.transform(AFFINE, (1, 0, 0, 0, 1, ±0.45·m/10·H))`."

# op name → its function here, from the op table (`recipe_ops.RAND_AUGMENT`)
OPS: dict[str, Op] = recipe_ops.rand_augment_ops(globals())


def apply_op(
    name: str,
    images: Any,
    magnitude: Any,
    sign: Any = 1.0,
    fill: int | Sequence[int] = recipe_ops.IMAGENET_FILL,
    increasing: bool = False,
) -> tf.Tensor:
    """One RandAugment op, deterministically: uint8 `[N, H, W, C]` (or `[H, W, C]`) → uint8, with
    magnitude(s) and sign(s) per example (scalars broadcast)."""
    x = tf.convert_to_tensor(images)
    single = x.shape.rank == 3
    x = tf.cast(x[None] if single else x, tf.float32)
    n = tf.shape(x)[0]
    m = tf.broadcast_to(tf.cast(magnitude, tf.float64), [n])
    s = tf.broadcast_to(tf.cast(sign, tf.float64), [n])
    out = tf.cast(OPS[name](x, m, s, fill_value(fill, x.shape[-1]), increasing), tf.uint8)
    return out[0] if single else out


def op_params(
    u: tf.Tensor, num_ops: int, n_choices: int, magnitude: float, magnitude_std: float, p: float
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
    """From `u [N, 4·num_ops]`: `(op index [N, L] int32, applied [N, L] bool, magnitude [N, L]
    float64 ~ N(magnitude, std) clipped to [0, 10], sign [N, L] ±1 float64)`."""
    recipe_ops.check_uniforms(u.shape, num_ops)
    u = tf.reshape(tf.cast(u, tf.float64), [-1, num_ops, recipe_ops.DRAWS_PER_OP])
    index = tf.minimum(tf.cast(tf.floor(u[..., 0] * n_choices), tf.int32), n_choices - 1)
    applied = u[..., 1] < p
    mag = tf.fill(tf.shape(u[..., 2]), tf.constant(magnitude, tf.float64))
    if magnitude_std:  # u = 0 gives -inf, clipped to 0 like any other draw below 0
        mag += magnitude_std * tf.math.ndtri(u[..., 2])
    mag = tf.clip_by_value(mag, 0.0, recipe_ops.MAX_LEVEL)
    sign = tf.where(u[..., 3] < 0.5, -1.0, 1.0)
    return index, applied, tf.cast(mag, tf.float64), tf.cast(sign, tf.float64)


def rand_augment_batch(
    images,
    u,
    *,
    num_ops=2,
    magnitude=10.0,
    magnitude_std=0.5,
    p=0.5,
    ops=None,
    fill=recipe_ops.IMAGENET_FILL,
    increasing=False,
):
    """The `rand_augment` batch op: `num_ops` layers, each example's drawn op applied where drawn
    as applied (`op_params`), on uint8 values; float32 in [0, 1] out."""
    names = tuple(ops) if ops is not None else recipe_ops.RAND_TRANSFORMS
    index, applied, mags, signs = op_params(u, num_ops, len(names), magnitude, magnitude_std, p)
    fill_c = fill_value(fill, images.shape[-1])
    x = tf.cast(to_uint8(images), tf.float32)
    for layer in range(num_ops):
        m, s = mags[:, layer], signs[:, layer]
        branches = [
            lambda part, rows, op=OPS[name], m=m, s=s: op(
                part, tf.gather(m, rows), tf.gather(s, rows), fill_c, increasing
            )
            for name in names
        ]
        x = partitioned(x, tf.where(applied[:, layer], index[:, layer], len(names)), branches)
    return to_float(tf.cast(x, tf.uint8))


BATCH_OPS = {"rand_augment": rand_augment_batch}
