"""RandAugment on the accelerator: the device twin of `host/randaugment.py` (jnp only, no
TensorFlow).

Same 15 ops + Identity, same level → argument table (`recipe_ops.RAND_AUGMENT`: timm / PyContrast
`rand-n2-m10-mstd0.5`, InfoMin's augmentation "D"), same draws (`op_params` reads the same 4 uniforms per drawn op,
`recipe_ops.DRAWS_PER_OP`) and the same PIL uint8 arithmetic, so a recipe's `rand_augment` op
means the same on either side. Each op takes float32 `[N, H, W, C]` holding integers in [0, 255],
per-example magnitudes `m [N]` (in [0, 10]) and signs `[N]` (±1), and returns the same layout.
Everything is jit-able with static shapes and no data-dependent control flow: `rand_augment` runs
every op on the whole batch and selects each example's drawn op with masks.

What differs: JAX runs float32 (x64 off) where the host uses float64 (magnitudes, levels, enhance
factors, affine coordinates). Given the same float32 magnitude the point ops still equal the
host's exactly (`exact.py`; tests/data/device/test_device_randaugment.py):
- integer levels (`int(4·m/10)` bits, `int(256·m/10)` threshold, `int(110·m/10)` added) compare
  `m` with float32 thresholds of the host's float64 formula, precomputed in numpy;
- enhance factors are the float32 rounding of the exact `a·m + b`, computed from error-free
  products of 12-bit halves summed with TwoSum; the host's float64 value rounds to the same
  float32 except where `a·m + b` lies exactly halfway between two float32 (then float64's own
  error decides): 60 per million uniform `m` in [0, 10], all below 1, and 1 in ~1,600 with
  `increasing`; a factor one float32 apart changes a blended pixel only rarely;
- blend products `f·(x − deg)` are rounded once, as TF rounds them (XLA would otherwise contract
  `deg + f·(x − deg)` into a fused multiply-add: measured 1e-6 of random blends off by one);
- AutoContrast's float64 LUT `int(v·scale − lo·scale)` is the exact integer floor except for the
  12,094 of 2.8M `(lo, hi, v)` triples where the float64 sum rounds just below the exact integer:
  a precomputed table, searched with `jnp.searchsorted`;
- Contrast's mean, Sharpness' smoothing filter and Equalize are int32.
ShearX/Y and TranslateX/YRel at m = 10 (the clipped draw: half of the default draws) reproduce the
host's float64 sampling bit for bit (`exact.sample_max_level`); at other magnitudes, and Rotate,
they sample at float32 displacements (`xin − xs`, the level argument rounded once): measured at most 1
grey level, on 0.17% of one image's values at m = 3.7 and 5e-6 of all values over the test's
magnitudes; at magnitudes that make the shift a short decimal fraction of a pixel (m = 2.5, 5, 7.5:
e.g. 0.45·0.25·16 = 1.8 px) exact ties are common and the host's float64 rounding decides them:
up to ~10% of one image's values differ by 1 there. `op_params` draws the magnitude with float32
`ndtri`, within 1e-6 of the host's float64 one, so a level can rarely land on the other side of an
integer (3 solarize thresholds and 1 solarize-add level in 400,000 magnitudes at N(5, 1)); a
whole `rand_augment` differs from the host by 1 grey level on 1e-6 to 2e-5 of the values, all
from these float32 magnitudes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from ssl_jax.data import recipe_ops
from ssl_jax.data.device.exact import (
    auto_contrast_exceptions,
    ceil32,
    hi12,
    level,
    max_level_tables,
    pixels,
    round_linear,
    sample_max_level,
    thresholds,
)

Op = Callable[[jax.Array, jax.Array, jax.Array, jax.Array, bool], jax.Array]


def _b(v: jax.Array) -> jax.Array:
    """Per-example `[N]` → `[N, 1, 1, 1]`."""
    return jnp.reshape(v, (-1, 1, 1, 1))


# --------------------------------------------------------------------------------------------------
# PIL helpers (float32 holding uint8 values)


def _luma_pil(x: jax.Array) -> jax.Array:
    """PIL's `convert('L')`: `(19595 R + 38470 G + 7471 B + 2^15) >> 16`, int32 `[..., 1]`."""
    q = x.astype(jnp.int32)
    if x.shape[-1] == 1:
        return q
    return (q[..., 0:1] * 19595 + q[..., 1:2] * 38470 + q[..., 2:3] * 7471 + 32768) >> 16


def blend(degenerate: jax.Array, x: jax.Array, factor: jax.Array) -> jax.Array:
    """PIL `Image.blend(degenerate, x, factor)` as the host computes it: `deg + fl(f·(x − deg))`
    in float32, truncated and clipped to [0, 255]; `factor [N]` float32.

    The product is rounded once on its own (split into two exact products of the 12-bit halves of
    `f`), so XLA's multiply-add contraction cannot change the result."""
    f = _b(jnp.asarray(factor, jnp.float32))
    fh = hi12(f)
    fl = f - fh
    k = x - degenerate  # integers in [-255, 255]: fh·k, fl·k exact
    return jnp.clip(jnp.floor(degenerate + (fh * k + fl * k)), 0.0, 255.0)


def fill_value(fill: int | Sequence[int], channels: int) -> jax.Array:
    """`fill` as `[C]` float32 (`recipe_ops.fill_values`), as the host's `fill_value`."""
    return jnp.asarray(recipe_ops.fill_values(fill, channels), jnp.float32)


def enhance_factor(m: jax.Array, sign: jax.Array, increasing: bool) -> jax.Array:
    """`ImageEnhance` factor `1.8·m/10 + 0.1`, or `max(0.1, 1 ± 0.9·m/10)` with `increasing`, as
    the float32 the host's float64 value rounds to."""
    if increasing:
        return jnp.maximum(
            np.float32(recipe_ops.ENHANCE_BASE),
            round_linear(sign * m, recipe_ops.ENHANCE_INCREASING / recipe_ops.MAX_LEVEL, 1.0),
        )
    return round_linear(m, recipe_ops.ENHANCE_SCALE / recipe_ops.MAX_LEVEL, recipe_ops.ENHANCE_BASE)


def _sample(x: jax.Array, tx: jax.Array, ty: jax.Array, fill: jax.Array) -> jax.Array:
    """PIL `Image.transform(AFFINE, BILINEAR, fillcolor=fill)` (the host's `affine`) with the input
    point of output pixel centre `(xs, ys) = (i + .5, j + .5)` given as its displacement
    `(xs + tx, ys + ty)` (float32, broadcast to `[N, H, W]`).

    Outside `[0, W) × [0, H)`: `fill`; inside: bilinear with edge-clamped neighbours, truncated.
    The displacement's floor and fraction and the inside test are exact in float32 (the pixel
    index is added after), so only the displacement itself carries float32 error."""
    n, height, width, channels = x.shape
    xi = jnp.arange(width, dtype=jnp.float32)[None, None, :]
    yi = jnp.arange(height, dtype=jnp.float32)[None, :, None]
    tx = jnp.broadcast_to(tx, (n, height, width))
    ty = jnp.broadcast_to(ty, (n, height, width))
    valid = (tx >= -(xi + 0.5)) & (tx < width - 0.5 - xi) & (ty >= -(yi + 0.5))
    valid &= ty < height - 0.5 - yi
    fx, fy = jnp.floor(tx), jnp.floor(ty)
    dx, dy = (tx - fx)[..., None], (ty - fy)[..., None]
    x0 = (xi + fx).astype(jnp.int32)  # floor(xin − 0.5)
    y0 = (yi + fy).astype(jnp.int32)
    xa, xb = jnp.clip(x0, 0, width - 1), jnp.clip(x0 + 1, 0, width - 1)
    ya, yb = jnp.clip(y0, 0, height - 1), jnp.clip(y0 + 1, 0, height - 1)

    def at(yy, xx):
        return pixels(x, yy * width + xx)

    a, b = at(ya, xa), at(ya, xb)
    top = a + (b - a) * dx
    a, b = at(yb, xa), at(yb, xb)
    bottom = a + (b - a) * dx
    value = jnp.floor(top + (bottom - top) * dy)
    return jnp.where(valid[..., None], value, fill)


def smooth(x: jax.Array) -> jax.Array:
    """PIL `ImageFilter.SMOOTH` (3×3, centre 5, others 1, /13, rounded) in int32; border pixels
    kept."""
    q = x.astype(jnp.int32)
    height, width = x.shape[1:3]
    box = sum(q[:, i : height - 2 + i, j : width - 2 + j] for i in range(3) for j in range(3))
    inner = (2 * (box + 4 * q[:, 1:-1, 1:-1]) + 13) // 26  # floor(s / 13 + 0.5)
    return q.at[:, 1:-1, 1:-1].set(inner).astype(jnp.float32)


# --------------------------------------------------------------------------------------------------
# The ops: `op(x [N, H, W, C], m [N], sign [N], fill [C], increasing)`


def identity(x, m, sign, fill, increasing):
    """No change."""
    return x


def auto_contrast(x, m, sign, fill, increasing):
    """`ImageOps.autocontrast`: per channel, `int(v · 255/(hi − lo) − lo · 255/(hi − lo))` with
    the host's (PIL's) float64 rounding: the exact floor, less one on the tabulated triples."""
    q = x.astype(jnp.int32)
    lo = jnp.min(q, axis=(1, 2), keepdims=True)
    hi = jnp.max(q, axis=(1, 2), keepdims=True)
    out = (q - lo) * 255 // jnp.maximum(hi - lo, 1)
    table = auto_contrast_exceptions()
    keys = jnp.asarray(table)
    key = (lo * 256 + hi) * 256 + q
    found = keys[jnp.minimum(jnp.searchsorted(keys, key), table.size - 1)] == key
    return jnp.where(hi > lo, out - found, q).astype(jnp.float32)


def equalize(x, m, sign, fill, increasing):
    """`ImageOps.equalize`: per channel, `lut[i] = (step // 2 + #pixels < i) // step` with
    `step = (#pixels − #pixels at the top value) // 255` (identity when 0).

    The histogram is a one-hot compare summed over the pixels: XLA fuses the compare into the
    reduction (nothing of size `N·H·W·C·256` is stored), it is deterministic, and it avoids a
    scatter-add (segment sum), whose atomic adds serialise on the many pixels of one bin."""
    n, height, width, channels = x.shape
    q = x.astype(jnp.int32)
    hist = jnp.sum(q[..., None] == jnp.arange(256), axis=(1, 2), dtype=jnp.int32)  # [N, C, 256]
    top = jnp.max(q, axis=(1, 2))  # [N, C]
    at_top = jnp.take_along_axis(hist, top[..., None], axis=-1)[..., 0]
    step = ((height * width - at_top) // 255)[..., None]
    before = jnp.cumsum(hist, axis=-1) - hist
    lut = jnp.minimum((step // 2 + before) // jnp.maximum(step, 1), 255)
    lut = jnp.where(step > 0, lut, jnp.arange(256))  # [N, C, 256]
    pixels = q.reshape(n, height * width, channels).transpose(0, 2, 1)
    out = jnp.take_along_axis(lut, pixels, axis=-1)  # [N, C, H·W]
    return out.transpose(0, 2, 1).reshape(x.shape).astype(jnp.float32)


def invert(x, m, sign, fill, increasing):
    """`ImageOps.invert`: `255 − v`."""
    return 255.0 - x


def posterize(x, m, sign, fill, increasing):
    """`ImageOps.posterize(int(4·m/10))` (PosterizeTpu): keep the top bits, 0 bits = black."""
    scale = int(recipe_ops.RAND_AUGMENT["PosterizeTpu"].scale)
    bits = level(m, scale)
    if increasing:
        bits = scale - bits
    shift = _b(8 - bits)
    return ((x.astype(jnp.int32) >> shift) << shift).astype(jnp.float32)


def solarize(x, m, sign, fill, increasing):
    """`ImageOps.solarize(threshold = int(256·m/10))`: `255 − v` where `v >= threshold`."""
    scale = int(recipe_ops.RAND_AUGMENT["Solarize"].scale)
    threshold = level(m, scale)
    if increasing:
        threshold = scale - threshold
    return jnp.where(x >= _b(threshold).astype(jnp.float32), 255.0 - x, x)


def solarize_add(x, m, sign, fill, increasing):
    """timm `solarize_add(add = int(110·m/10), thresh=128)`: `min(255, v + add)` where `v < 128`."""
    add = _b(level(m, int(recipe_ops.RAND_AUGMENT["SolarizeAdd"].scale))).astype(jnp.float32)
    return jnp.where(x < 128.0, jnp.minimum(255.0, x + add), x)


def color(x, m, sign, fill, increasing):
    """`ImageEnhance.Color`: blend with PIL's luma image; identity on 1 channel."""
    if x.shape[-1] == 1:
        return x
    return blend(_luma_pil(x).astype(jnp.float32), x, enhance_factor(m, sign, increasing))


def contrast(x, m, sign, fill, increasing):
    """`ImageEnhance.Contrast`: blend with the constant `int(mean(luma) + 0.5)` (int32)."""
    total = jnp.sum(_luma_pil(x), axis=(1, 2, 3), keepdims=True)
    count = x.shape[1] * x.shape[2]
    mean = ((2 * total + count) // (2 * count)).astype(jnp.float32)
    return blend(mean, x, enhance_factor(m, sign, increasing))


def brightness(x, m, sign, fill, increasing):
    """`ImageEnhance.Brightness`: blend with black."""
    return blend(jnp.zeros_like(x), x, enhance_factor(m, sign, increasing))


def sharpness(x, m, sign, fill, increasing):
    """`ImageEnhance.Sharpness`: blend with `smooth(x)`."""
    return blend(smooth(x), x, enhance_factor(m, sign, increasing))


def _centres(size: int, axis: int, origin: float = 0.0) -> jax.Array:
    """Pixel centres `i + 0.5 − origin` (exact) along `axis` of `[N, H, W]`."""
    shape = [1, 1, 1]
    shape[axis] = size
    return (jnp.arange(size, dtype=jnp.float32) + (0.5 - origin)).reshape(shape)


def rotate(x, m, sign, fill, increasing):
    """`Image.rotate(±30·m/10 degrees, BILINEAR, fillcolor=fill)`: counter-clockwise about
    `(W/2, H/2)`; the host's coefficients `(cos, sin, c, −sin, cos, f)` of `θ = −angle` as the
    displacement `(cos − 1)·(xs − W/2) + sin·(ys − H/2)` (and the same for y), `cos − 1` taken as
    `−2 sin²(θ/2)`."""
    height, width = x.shape[1:3]
    degrees = recipe_ops.RAND_AUGMENT["Rotate"].scale  # at level 10
    radians = math.pi / (180.0 / degrees * recipe_ops.MAX_LEVEL)  # per magnitude step
    theta = (-sign * round_linear(m, radians))[:, None, None]
    sin, cos_m1 = jnp.sin(theta), -2.0 * jnp.square(jnp.sin(0.5 * theta))
    xc, yc = _centres(width, 2, width / 2), _centres(height, 1, height / 2)
    tx = cos_m1 * xc + sin * yc
    ty = cos_m1 * yc - sin * xc
    return _sample(x, tx, ty, fill)


def _per_level(name: str) -> float:
    """Op `name`'s argument per magnitude step (`RAND_AUGMENT[name].scale / MAX_LEVEL`)."""
    return recipe_ops.RAND_AUGMENT[name].scale / recipe_ops.MAX_LEVEL


def _shear_x(x, m, sign, fill):
    k = (sign * round_linear(m, _per_level("ShearX")))[:, None, None]
    return _sample(x, k * _centres(x.shape[1], 1), 0.0, fill)


def _shear_y(x, m, sign, fill):
    k = (sign * round_linear(m, _per_level("ShearY")))[:, None, None]
    return _sample(x, 0.0, k * _centres(x.shape[2], 2), fill)


def _translate_x(x, m, sign, fill):
    t = sign * round_linear(m, _per_level("TranslateXRel") * x.shape[2])
    return _sample(x, t[:, None, None], 0.0, fill)


def _translate_y(x, m, sign, fill):
    t = sign * round_linear(m, _per_level("TranslateYRel") * x.shape[1])
    return _sample(x, 0.0, t[:, None, None], fill)


def _one_axis(name: str, generic: Callable, doc: str) -> Op:
    """An op that samples along one axis: float32 `generic`, and at m = 10 (half of the default
    draws) the host's float64 arithmetic exactly (`exact.sample_max_level`)."""

    def op(x, m, sign, fill, increasing):
        out = generic(x, m, sign, fill)
        tables = max_level_tables(name, x.shape[1], x.shape[2])
        if tables is None:
            return out
        return jnp.where(
            _b(m == recipe_ops.MAX_LEVEL), sample_max_level(x, sign, fill, tables), out
        )

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op


shear_x = _one_axis(
    "ShearX",
    _shear_x,
    "`Image.transform(AFFINE, (1, ±0.3·m/10, 0, 0, 1, 0))`: `xin = xs ± 0.3·m/10·ys`.",
)
shear_y = _one_axis(
    "ShearY",
    _shear_y,
    "`Image.transform(AFFINE, (1, 0, 0, ±0.3·m/10, 1, 0))`: `yin = ys ± 0.3·m/10·xs`.",
)
translate_x_rel = _one_axis(
    "TranslateXRel", _translate_x, "`Image.transform(AFFINE, (1, 0, ±0.45·m/10·W, 0, 1, 0))`."
)
translate_y_rel = _one_axis(
    "TranslateYRel", _translate_y, "`Image.transform(AFFINE, (1, 0, 0, 0, 1, ±0.45·m/10·H))`."
)


# op name → its function here, from the op table (`recipe_ops.RAND_AUGMENT`)
OPS: dict[str, Op] = recipe_ops.rand_augment_ops(globals())


# --------------------------------------------------------------------------------------------------
# Draws and the batched op


def op_params(
    u: jax.Array, num_ops: int, n_choices: int, magnitude: float, magnitude_std: float, p: float
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """The host's `op_params` in jnp. From `u [N, 4·num_ops]` (per drawn op: which op,
    applied or not, magnitude, sign): `(op index [N, L] int32, applied [N, L] bool, magnitude
    [N, L] float32 ~ N(magnitude, std) clipped to [0, 10] via `ndtri`, sign [N, L] ±1 float32)`.

    Index, applied and sign equal the host's exactly (float32 thresholds of its float64
    comparisons); the magnitude is float32 `ndtri`, within ~1e-6 of the host's float64 one."""
    recipe_ops.check_uniforms(u.shape, num_ops)
    u = jnp.reshape(jnp.asarray(u, jnp.float32), (-1, num_ops, recipe_ops.DRAWS_PER_OP))
    cuts = thresholds(lambda v: np.floor(v * n_choices), 1.0, n_choices - 1)
    index = jnp.sum(u[..., 0, None] >= jnp.asarray(cuts), axis=-1, dtype=jnp.int32)
    applied = u[..., 1] < ceil32(p)
    mag = jnp.full(u.shape[:-1], magnitude, jnp.float32)
    if magnitude_std:  # u = 0 gives -inf, clipped to 0 like any other draw below 0
        mag = mag + np.float32(magnitude_std) * jax.scipy.special.ndtri(u[..., 2])
    mag = jnp.clip(mag, 0.0, recipe_ops.MAX_LEVEL)
    sign = jnp.where(u[..., 3] < 0.5, -1.0, 1.0).astype(jnp.float32)
    return index, applied, mag, sign


def rand_augment(
    images: jax.Array,
    u: jax.Array,
    *,
    num_ops: int = 2,
    magnitude: float = 10.0,
    magnitude_std: float = 0.5,
    p: float = 0.5,
    ops: Sequence[str] | None = None,
    fill: int | Sequence[int] = recipe_ops.IMAGENET_FILL,
    increasing: bool = False,
) -> jax.Array:
    """timm `RandAugment` (the host's `rand_augment_batch`): float32 `images [N, H, W, C]` in
    [0, 1] and uniforms `u [N, 4·num_ops]` → float32 in [0, 1] (values k/255).

    Quantised to uint8 values on entry (`round(clip(x·255))`); `num_ops` layers, in each every
    example applies its drawn op from `ops` (default `RAND_TRANSFORMS`) when drawn as applied
    (probability `p`), else is unchanged. Every op runs on the whole batch and each example's
    result is selected with masks, so the cost does not depend on the draws. The layers are a
    `lax.scan` (one compiled layer: `num_ops` times less to compile; the same layers unrolled in
    a Python loop were miscompiled by XLA:CPU in jax 0.10.2, whole images off by up to 246 levels
    at 3 layers, a bug that disabling XLA's `cse` or `fusion` pass removed)."""
    names = tuple(ops) if ops is not None else recipe_ops.RAND_TRANSFORMS
    index, applied, mags, signs = op_params(u, num_ops, len(names), magnitude, magnitude_std, p)
    fill_c = fill_value(fill, images.shape[-1])
    x = jnp.round(jnp.clip(jnp.asarray(images, jnp.float32) * 255.0, 0.0, 255.0))
    group = jnp.where(applied, index, len(names))  # [N, L]; len(names): unchanged

    def layer(x, drawn):
        m, s, g = drawn
        out = x
        for k, name in enumerate(names):
            out = jnp.where(_b(g == k), OPS[name](x, m, s, fill_c, increasing), out)
        return out, None

    x, _ = jax.lax.scan(layer, x, (mags.T, signs.T, group.T))
    return x * np.float32(1.0 / 255.0)
