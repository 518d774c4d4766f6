"""Float32 arithmetic that reproduces the host RandAugment's float64 results (jnp, for
`randaugment.py`): exact linear levels and enhance factors (error-free products of 12-bit halves,
TwoSum), the float32 thresholds of the host's integer levels and comparisons, AutoContrast's
rounding table, and the host's one-axis bilinear sampling at m = 10 bit for bit.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from ssl_jax.data.recipe_ops import MAX_LEVEL, RAND_AUGMENT


def hi12(v: jax.Array) -> jax.Array:
    """`v` with its 12 low mantissa bits cleared: 12 significant bits, so that the product of two
    such numbers (or of one and an integer below 2^12) is exact in float32."""
    bits = jax.lax.bitcast_convert_type(v, jnp.uint32) & jnp.uint32(0xFFFFF000)
    return jax.lax.bitcast_convert_type(bits, jnp.float32)


def _np_hi12(v: float) -> np.float32:
    return (np.asarray(v, np.float32).view(np.uint32) & np.uint32(0xFFFFF000)).view(np.float32)


def _pieces(c: float) -> tuple[np.float32, ...]:
    """float64 `c` as float32 `c0 + c1 + c2` (c0, c1 of 12 bits), within ~2^-48·|c|."""
    c0 = _np_hi12(c)
    c1 = _np_hi12(c - float(c0))
    return c0, c1, np.float32(c - float(c0) - float(c1))


def _two_sum(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Knuth's TwoSum: `s + e == a + b` exactly, `s = fl(a + b)` (additions only, so safe from
    fused multiply-add contraction)."""
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def round_linear(m: jax.Array, a: float, b: float = 0.0) -> jax.Array:
    """float32 rounding of the exact `a·m + b` (float32 `m`, float64 constants `a`, `b`).

    Products of 12-bit halves are exact, the sum is compensated (TwoSum), so the result is the
    correctly rounded value unless `a·m + b` lies within ~2^-45 of a float32 rounding boundary; the
    host's float64 value (e.g. `m / 10 · 1.8 + 0.1`) then rounds to the same float32."""
    m = jnp.asarray(m, jnp.float32)
    mh = hi12(m)
    ml = m - mh
    a0, a1, a2 = _pieces(a)
    b0 = np.float32(b)
    b1 = np.float32(b - float(b0))
    s, c = mh * a0, jnp.zeros_like(m)
    for t in (b0, ml * a0, mh * a1, ml * a1, b1, mh * a2, ml * a2):
        s, e = _two_sum(s, t)
        c = c + e
    return s + c


def thresholds(fn: Callable[[np.ndarray], np.ndarray], top: float, count: int) -> np.ndarray:
    """For a non-decreasing integer function `fn` of float64 values (the host's formula), the
    smallest float32 `t_j` in [0, top] with `fn(t_j) >= j`, j = 1..count (binary search over
    float32 bit patterns), so that `fn(m) == sum_j (m >= t_j)` for every float32 `m` in
    [0, top]."""
    j = np.arange(1, count + 1)
    lo = np.zeros(count, np.int64)
    hi = np.full(count, np.asarray(top, np.float32).view(np.int32), np.int64)
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        ok = fn(mid.astype(np.int32).view(np.float32).astype(np.float64)) >= j
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid + 1)
    return lo.astype(np.int32).view(np.float32)


@functools.cache
def _level_thresholds(scale: int) -> np.ndarray:
    return thresholds(lambda m: np.floor(m / MAX_LEVEL * scale), MAX_LEVEL, scale)


def level(m: jax.Array, scale: int) -> jax.Array:
    """The host's integer level `floor(m / 10 · scale)` (float64) of float32 `m` in [0, 10],
    exactly, as int32 (`scale` 4: posterize bits, 256: solarize threshold, 110: solarize add)."""
    t = jnp.asarray(_level_thresholds(scale))
    return jnp.sum(jnp.asarray(m, jnp.float32)[..., None] >= t, axis=-1, dtype=jnp.int32)


def ceil32(p: float) -> np.float32:
    """Smallest float32 >= `p`: for float32 `u`, `u < p` (float64) iff `u < ceil32(p)`."""
    t = np.float32(p)
    return np.nextafter(t, np.float32(np.inf)) if float(t) < p else t


def pixels(x: jax.Array, idx: jax.Array) -> jax.Array:
    """`out[n, i, j, c] = x[n].flat_pixels[idx[n, i, j], c]`: each example's pixels at flat pixel
    indices `idx [N, H, W]` (in range), as one gather from the flattened batch."""
    n, height, width, channels = x.shape
    base = (jnp.arange(n, dtype=jnp.int32) * (height * width))[:, None, None]
    return jnp.take(x.reshape(-1, channels), (idx + base).reshape(-1), axis=0, mode="clip").reshape(
        x.shape
    )


@functools.cache
def auto_contrast_exceptions() -> np.ndarray:
    """Sorted keys `(lo·256 + hi)·256 + v` of the `(lo, hi, v)` where the host's float64
    `floor(v·s + (−lo·s))`, `s = 255/(hi − lo)`, is one below the exact `(v − lo)·255 // (hi − lo)`
    (only possible where the exact value is an integer: 190,950 triples checked, 12,094 kept)."""
    keys = []
    for d in range(1, 256):
        k = np.arange(0, d + 1, d // math.gcd(d, 255))  # v − lo with an integer result
        lo, k = np.meshgrid(np.arange(256 - d), k, indexing="ij")
        v = lo + k
        s = 255.0 / d
        low = np.floor(v * s + (-lo * s)) < k * 255 // d
        keys.append(((lo * 256 + lo + d) * 256 + v)[low])
    return np.sort(np.concatenate(keys)).astype(np.int32)


def _host_coeffs(name: str, s: float, height: float, width: float) -> tuple[float, ...]:
    """The host's `Image.transform(AFFINE)` coefficients of the one-axis op `name` at the signed
    level fraction `s = ±m/10` (float64, its order of operations), for the exact path at m = 10."""
    a = RAND_AUGMENT[name].scale * s
    return {
        "ShearX": (1.0, a, 0.0, 0.0, 1.0, 0.0),
        "ShearY": (1.0, 0.0, 0.0, a, 1.0, 0.0),
        "TranslateXRel": (1.0, 0.0, a * width, 0.0, 1.0, 0.0),
        "TranslateYRel": (1.0, 0.0, 0.0, 0.0, 1.0, a * height),
    }[name]


@functools.cache
def max_level_tables(name: str, height: int, width: int) -> tuple[np.ndarray, ...] | None:
    """The host's float64 sampling of op `name` at m = 10, signs (−1, +1): `(inside [2, H, W],
    first and second neighbour [2, H, W] (flat pixel indices), the fraction d·2^64 as four 16-bit
    limbs [2, 4, H, W])`. These ops move along one axis, so a value is `floor(fl(A + fl(k·d)))`
    with `k = B − A`. None where some fraction is not a multiple of 2^-64 (never seen)."""
    along_x = name in ("ShearX", "TranslateXRel")
    tables = []
    for sign in (-1.0, 1.0):
        c = _host_coeffs(name, sign * MAX_LEVEL / MAX_LEVEL, float(height), float(width))
        xs = np.arange(width, dtype=np.float64)[None, :] + 0.5
        ys = np.arange(height, dtype=np.float64)[:, None] + 0.5
        xin = c[0] * xs + c[1] * ys + c[2]
        yin = c[3] * xs + c[4] * ys + c[5]
        inside = (xin >= 0.0) & (xin < width) & (yin >= 0.0) & (yin < height)
        xin, yin = xin - 0.5, yin - 0.5
        x0, y0 = np.floor(xin), np.floor(yin)
        dx, dy = xin - x0, yin - y0
        if np.any((dy if along_x else dx) != 0.0):
            return None
        xa, xb = (np.clip(v, 0, width - 1).astype(np.int32) for v in (x0, x0 + 1))
        ya, yb = (np.clip(v, 0, height - 1).astype(np.int32) for v in (y0, y0 + 1))
        first = ya * width + xa
        second = ya * width + xb if along_x else yb * width + xa
        scaled = np.ldexp(dx if along_x else dy, 64)
        if np.any(scaled != np.floor(scaled)):
            return None
        limbs = [np.mod(np.floor(np.ldexp(scaled, -16 * i)), 65536.0) for i in range(4)]
        tables.append((inside, first, second, np.stack(limbs).astype(np.int32)))
    return tuple(np.stack(t) for t in zip(*tables))


def _log2(v: jax.Array) -> jax.Array:
    """`floor(log2 v)` of int32 `v >= 1`."""
    return 31 - jax.lax.clz(v)


def _quantum_shift(v: jax.Array) -> jax.Array:
    """log2 of the float64 spacing, in units of 2^-64, just below the integer `v >= 1`."""
    return _log2(v) + 12 - ((v & (v - 1)) == 0).astype(jnp.int32)


def sample_max_level(x: jax.Array, sign: jax.Array, fill: jax.Array, tables) -> jax.Array:
    """The host's float64 one-axis bilinear sampling at m = 10, reproduced bit for bit in int32:
    `floor(fl(A + fl(k·d)))` is `A + floor(k·d)`, plus 1 where `k·d` lies so little below an
    integer that float64's two round-to-nearest-even steps reach it."""
    n, height, width, channels = x.shape
    s = (sign > 0).astype(jnp.int32)
    inside, first, second, limbs = (jnp.asarray(t)[s] for t in tables)
    q = x.astype(jnp.int32)
    a, b = pixels(q, first), pixels(q, second)
    k = b - a
    ak = jnp.abs(k)
    # |k|·d·2^64 in 16-bit limbs f0..f3 (the fraction) and the integer part.
    carry, f = 0, []
    for i in range(4):
        v = ak * limbs[:, i, :, :, None] + carry
        f.append(v & 0xFFFF)
        carry = v >> 16
    neg, fraction = k < 0, (f[0] | f[1] | f[2] | f[3]) != 0
    j = jnp.where(neg, -carry - fraction.astype(jnp.int32), carry)  # floor(k·d)
    # g = j + 1 − k·d, in units of 2^-64, where it is below 2^22 (float64 rounding can reach j + 1).
    tiny_pos = ~neg & (f[3] == 0xFFFF) & (f[2] == 0xFFFF) & (f[1] >= 0xFFC0)
    tiny_neg = neg & fraction & (f[3] == 0) & (f[2] == 0) & (f[1] < 64)
    g = jnp.where(tiny_pos, ((0xFFFF - f[1]) << 16) + (0x10000 - f[0]), (f[1] << 16) + f[0])
    top = j + 1
    # fl(k·d): g rounded (half to even) to the spacing below `top` (none at 0: tiny, exact).
    shift = jnp.where(
        top > 0,
        _quantum_shift(jnp.maximum(top, 1)),
        jnp.where(top < 0, _log2(jnp.maximum(-top, 1)) + 12, 0),
    )
    q = g >> shift
    rem, half = g - (q << shift), (1 << shift) >> 1
    q = q + ((rem > half) | ((rem == half) & (half > 0) & ((q & 1) == 1))).astype(jnp.int32)
    # fl(A + fl(k·d)) reaches A + j + 1 when what is left is at most half its spacing.
    reach = (tiny_pos | tiny_neg) & (
        (q << shift) <= (1 << (_quantum_shift(jnp.maximum(a + top, 1)) - 1))
    )
    value = (a + j + reach.astype(jnp.int32)).astype(jnp.float32)
    return jnp.where(inside[..., None], value, fill)
