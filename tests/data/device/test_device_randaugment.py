"""The device RandAugment (`device/randaugment.py`, jnp, float32) against the host one
(`host/randaugment.py`, TensorFlow, float64 where PIL uses doubles).

Inputs: random uint8 images (fixed seeds): 24 of 12×16 RGB, 24 of 13×11 grey, 24 low-contrast
40×36 RGB (a histogram step > 0 for Equalize needs > 255 pixels; narrow ranges hit AutoContrast's
float64 rounding), 24 of 32×32 RGB at m = 10; magnitudes 0, 10, 3.7, 5.3, 2.7, 9.99 and six
uniform float32 ones, each with both signs. The host is fed the same float32 magnitudes (its
float64 cast is exact).

Measured differences (uint8 levels):
- AutoContrast, Equalize, Invert, Identity, PosterizeTpu, Solarize, SolarizeAdd, Color, Contrast,
  Brightness, Sharpness (both level tables): exact (0 on every value), asserted exact; levels on
  200,000 uniform magnitudes exact; enhance factors equal but for exact float32 ties (asserted).
- ShearX, ShearY, TranslateXRel, TranslateYRel at m = 10 and 0: exact, asserted exact.
- Rotate, and those four at the other magnitudes: max 1, on at most 0.17% of one image's values
  (TranslateXRel, m = 3.7), 5e-6 of all values; asserted max 1, ≤ 2% per image, ≤ 1e-4 overall.
  At m = 2.5 and 5 (shifts that are short decimal fractions of a pixel, where the host's float64
  rounding decides exact ties): max 1 on at most 8.3% of one image's values (TranslateXRel, 2.5,
  12×16); asserted max 1, ≤ 12% per image.
- `op_params`: index, applied and sign exact; magnitudes within 9.3e-7 (float32 `ndtri`), no
  level moved across an integer in these 40,000 (measured 4 in 400,000 at N(5, 1)); asserted
  ≤ 2e-6 and ≤ 10 moved levels.
- `rand_augment` on 256 images: RGB (all ops, CMC's ops, 3 layers `increasing`): 0; grey: max 1 on
  2e-5 of the values (one image); on 2,000 images 1e-6 to 7e-6; asserted max 1, ≤ 5% per image,
  ≤ 1e-4 overall. A one-level difference can be amplified by a following op (not seen).
"""

import functools
import subprocess
import sys
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tensorflow as tf

from ssl_jax.data import recipe_ops
from ssl_jax.data.device import exact as dre
from ssl_jax.data.device import randaugment as dra
from ssl_jax.data.host import augment
from ssl_jax.data.host import randaugment as ra

FILL = (124, 116, 104)
GEOMETRIC = ("Rotate", "ShearX", "ShearY", "TranslateXRel", "TranslateYRel")
ONE_AXIS = ("ShearX", "ShearY", "TranslateXRel", "TranslateYRel")
LEVEL_TABLE_OPS = ("PosterizeTpu", "Solarize", "Color", "Contrast", "Brightness", "Sharpness")
POINT = tuple(name for name in dra.OPS if name not in GEOMETRIC)

_rng = np.random.default_rng(0)
MAGS = np.concatenate([[0.0, 10.0, 3.7, 5.3, 2.7, 9.99], _rng.uniform(0, 10, 6)]).astype(np.float32)
M = np.concatenate([MAGS, MAGS])
SIGN = np.repeat(np.float32([1.0, -1.0]), len(MAGS))


def _random(shape, seed):
    return np.random.default_rng(seed).integers(0, 256, shape).astype(np.uint8)


def _low_contrast(shape, seed):
    rng = np.random.default_rng(seed)
    n, _, _, c = shape
    lo, span = rng.integers(0, 200, (n, 1, 1, c)), rng.integers(1, 56, (n, 1, 1, c))
    return (lo + rng.integers(0, 1000, shape) % (span + 1)).astype(np.uint8)


IMAGES = {
    "rgb": _random((len(M), 12, 16, 3), 1),
    "grey": _random((len(M), 13, 11, 1), 2),
    "low_contrast": _low_contrast((len(M), 40, 36, 3), 3),
}


@functools.cache
def _device_op(name, increasing):
    return jax.jit(lambda x, m, s, f: dra.OPS[name](x, m, s, f, increasing))


def _both(name, images, m=M, sign=SIGN, increasing=False, op=None):
    """(device, host) uint8 results as int arrays, same float32 magnitudes and signs."""
    fill = dra.fill_value(FILL, images.shape[-1])
    device_op = op or _device_op(name, increasing)
    dev = device_op(jnp.asarray(images, jnp.float32), m, sign, fill)
    host = ra.apply_op(
        name, images, m.astype(np.float64), sign.astype(np.float64), FILL, increasing
    )
    return np.asarray(dev).astype(int), host.numpy().astype(int)


def _assert_close(dev, host, max_diff=0, per_image=0.0, where=""):
    """At most `max_diff` levels apart, on at most a `per_image` fraction of any image's values."""
    diff = np.abs(dev - host)
    assert diff.max() <= max_diff, (where, int(diff.max()))
    frac = (diff > 0).reshape(len(diff), -1).mean(axis=1)
    assert frac.max() <= per_image, (where, float(frac.max()))
    return diff


@pytest.mark.parametrize("name", POINT)
def test_point_op_equals_host(name):
    for kind, images in IMAGES.items():
        for increasing in (False, True) if name in LEVEL_TABLE_OPS else (False,):
            dev, host = _both(name, images, increasing=increasing)
            _assert_close(dev, host, where=(kind, increasing))
            assert dev.shape == images.shape


def test_point_ops_are_not_trivial_here():
    """The inputs exercise the interesting paths: Equalize's step > 0, AutoContrast's float64
    rounding exceptions, both level tables differing."""
    low = IMAGES["low_contrast"]
    dev, _ = _both("Equalize", low)
    assert (dev != low).mean() > 0.5
    q = low.astype(int)
    lo, hi = q.min(axis=(1, 2), keepdims=True), q.max(axis=(1, 2), keepdims=True)
    keys = (lo * 256 + hi) * 256 + q
    assert np.isin(keys, dre.auto_contrast_exceptions()).sum() > 100
    up, _ = _both("Contrast", IMAGES["rgb"], increasing=False)
    inc, _ = _both("Contrast", IMAGES["rgb"], increasing=True)
    assert (up != inc).any()


def test_geometric_ops_within_one_level():
    total, differing = 0, 0
    for name in GEOMETRIC:
        for kind, images in IMAGES.items():
            dev, host = _both(name, images)
            diff = _assert_close(dev, host, max_diff=1, per_image=0.02, where=(name, kind))
            total, differing = total + diff.size, differing + (diff > 0).sum()
            exact = (M == 0.0) | ((M == 10.0) if name in ONE_AXIS else False)
            np.testing.assert_array_equal(dev[exact], host[exact], err_msg=f"{name} {kind}")
            moved = np.any(dev != images, axis=(1, 2, 3))
            assert moved[M > 0].all() and not moved[M == 0].any(), (name, kind)
    assert differing / total <= 1e-4, differing / total
    # Short-decimal shifts: ties decided by the host's float64 rounding.
    nice = np.repeat(np.float32([2.5, 5.0]), 4)
    sign = np.tile(np.float32([1.0, -1.0]), 4)
    for name in ONE_AXIS:
        for kind, images in IMAGES.items():
            dev, host = _both(name, images[:8], nice, sign)
            _assert_close(dev, host, max_diff=1, per_image=0.12, where=(name, kind, "nice"))


def test_one_axis_ops_exact_at_max_level():
    """m = 10 (the clipped draw): the host's float64 sampling, bit for bit, on the GPU size."""
    images = _random((24, 32, 32, 3), 4)
    m = np.full(24, 10.0, np.float32)
    sign = np.where(np.arange(24) % 2 == 0, 1.0, -1.0).astype(np.float32)
    for name in ONE_AXIS:
        dev, host = _both(name, images, m, sign)
        np.testing.assert_array_equal(dev, host, err_msg=name)


def test_levels_and_enhance_factors_equal_the_host_formulas():
    rng = np.random.default_rng(5)
    m = np.concatenate([rng.uniform(0, 10, 200_000), np.arange(0, 10.001, 0.05)]).astype(np.float32)
    m64 = m.astype(np.float64)
    for scale in (4, 256, 110):
        np.testing.assert_array_equal(np.asarray(dre.level(m, scale)), np.floor(m64 / 10 * scale))
    factor = jax.jit(dra.enhance_factor, static_argnums=2)
    ties = 0
    for sign, increasing in ((1, False), (1, True), (-1, True)):
        if increasing:
            host = np.maximum(0.1, 1 + sign * (m64 / 10 * 0.9)).astype(np.float32)
        else:
            host = (m64 / 10 * 1.8 + 0.1).astype(np.float32)
        dev = np.asarray(factor(m, np.full_like(m, sign), increasing))
        # Only where the exact value lies halfway between two float32 (float64's error decides).
        for k in np.flatnonzero(dev != host):
            mk = Fraction(float(m[k]))
            exact = (
                1 + sign * Fraction(9, 100) * mk
                if increasing
                else Fraction(18, 100) * mk + Fraction(1, 10)
            )
            a, b = sorted((Fraction(float(dev[k])), Fraction(float(host[k]))))
            assert exact == (a + b) / 2 and b - a == Fraction(float(np.spacing(np.float32(a)))), (
                m[k],
                increasing,
            )
            ties += 1
    assert ties < 1e-3 * 3 * m.size, ties


def test_auto_contrast_rounding_table():
    """Every (lo, hi) with a float64 exception, all values between: exact."""
    keys = dre.auto_contrast_exceptions()
    assert keys.size == 12094 and np.all(np.diff(keys) > 0)
    pairs = np.unique(keys // 256)
    lo, hi = pairs // 256, pairs % 256
    rows = np.minimum(lo[:, None] + np.arange(256)[None], hi[:, None])  # lo..hi, hi repeated
    images = rows[:, None, :, None].astype(np.uint8)  # [P, 1, 256, 1]
    dev = np.asarray(jax.jit(dra.auto_contrast, static_argnums=4)(images, None, None, None, False))
    host = ra.auto_contrast(tf.constant(images, tf.float32), None, None, None, False).numpy()
    np.testing.assert_array_equal(dev, host)
    exact = (rows - lo[:, None]) * 255 // (hi - lo)[:, None]
    first = np.arange(256)[None] <= (hi - lo)[:, None]  # each v once
    assert ((exact != dev[:, 0, :, 0]) & first).sum() == keys.size


def test_op_params_equal_host():
    u = np.random.default_rng(6).random((20_000, 8)).astype(np.float32)
    u[:3, 2] = 0.0  # ndtri(0) = -inf: clipped to 0
    for n_choices, magnitude, std, p in (
        (15, 10.0, 0.5, 0.5),
        (8, 5.0, 1.0, 0.3),
        (7, 9.0, 0.0, 1.0),
    ):
        host = [v.numpy() for v in ra.op_params(tf.constant(u), 2, n_choices, magnitude, std, p)]
        dev = [
            np.asarray(v) for v in dra.op_params(jnp.asarray(u), 2, n_choices, magnitude, std, p)
        ]
        for k in (0, 1, 3):
            np.testing.assert_array_equal(dev[k], host[k])
        assert dev[0].dtype == np.int32 and dev[1].dtype == bool and dev[2].dtype == np.float32
        assert np.abs(dev[2] - host[2]).max() <= 2e-6
        assert dev[2].min() >= 0.0 and dev[2].max() <= 10.0
        flips = sum(
            (np.asarray(dre.level(dev[2], s)) != np.floor(host[2] / 10 * s)).sum()
            for s in (4, 256, 110)
        )
        assert flips <= 10, flips  # measured 4 at N(5, 1); a float32 magnitude is not the host's
    assert (dev[2] == 9.0).all()
    with pytest.raises(ValueError, match="read 8 uniforms"):
        dra.op_params(jnp.zeros((2, 4)), 2, 15, 10.0, 0.5, 0.5)


RECIPE = {"num_ops": 2, "magnitude": 10.0, "magnitude_std": 0.5, "p": 0.5}


@functools.cache
def _device_rand_augment(**params):
    return jax.jit(functools.partial(dra.rand_augment, **params))


def _compare_rand_augment(images, u, params, device=None):
    """(device, host) as uint8 levels; `images` float32 in [0, 1]."""
    device = device or _device_rand_augment(**params)
    dev = np.asarray(device(jnp.asarray(images), jnp.asarray(u)))
    host = augment.apply_ops(
        tf.constant(images), [{"op": "rand_augment", **params}], tf.constant(u)
    )
    host = host.numpy()
    assert dev.dtype == np.float32 and dev.shape == images.shape
    levels = np.round(dev * 255.0)
    np.testing.assert_array_equal(dev, (levels * np.float32(1 / 255)).astype(np.float32))
    return levels.astype(int), np.round(host * 255.0).astype(int)


@pytest.mark.parametrize(
    "channels, params",
    [
        (3, {**RECIPE, "fill": FILL}),
        (3, {**RECIPE, "fill": FILL, "ops": recipe_ops.RAND_TRANSFORMS_CMC}),
        (1, {**RECIPE, "fill": FILL}),  # the fill's luma, 117
        (3, {**RECIPE, "fill": 0, "num_ops": 3, "magnitude": 7.0, "p": 0.8, "increasing": True}),
    ],
)
def test_rand_augment_matches_host(channels, params):
    rng = np.random.default_rng(7 + channels)
    images = rng.random((256, 12, 16, channels)).astype(np.float32)  # quantised on entry
    u = rng.random((256, recipe_ops.op_draws({"op": "rand_augment", **params}))).astype(np.float32)
    dev, host = _compare_rand_augment(images, u, params)
    diff = _assert_close(dev, host, max_diff=1, per_image=0.05)
    assert (diff > 0).mean() <= 1e-4, (diff > 0).mean()
    assert (dev != np.round(images * 255)).any(axis=(1, 2, 3)).mean() > 0.5  # ops did run


def test_rand_augment_jit_masks_no_control_flow():
    params = {**RECIPE, "fill": FILL}
    images = jnp.asarray(IMAGES["rgb"], jnp.float32) / 255.0
    u = jnp.asarray(np.random.default_rng(8).random((len(M), 8)), jnp.float32)
    jaxpr = str(jax.make_jaxpr(functools.partial(dra.rand_augment, **params))(images, u))
    assert "cond[" not in jaxpr  # every op runs on every example, selected with masks
    out = _device_rand_augment(**params)(images, u)
    # Not drawn as applied in either layer: the quantised input, untouched.
    index, applied, _, _ = dra.op_params(u, 2, 15, 10.0, 0.5, 0.5)
    idle = ~np.asarray(applied).any(axis=1)
    assert idle.any()
    np.testing.assert_array_equal(np.round(np.asarray(out)[idle] * 255), IMAGES["rgb"][idle])
    # p = 1, Invert only: inverted.
    invert = _device_rand_augment(num_ops=1, p=1.0, ops=("Invert",))
    np.testing.assert_allclose(invert(images, u[:, :4]), 1.0 - images, atol=1e-6)


def test_fill_value():
    assert dra.fill_value(FILL, 1).tolist() == [117.0]
    assert dra.fill_value(FILL, 3).tolist() == [124.0, 116.0, 104.0]
    assert dra.fill_value(7, 3).tolist() == [7.0] * 3
    with pytest.raises(ValueError, match="does not match"):
        dra.fill_value((1, 2), 3)
    assert set(dra.OPS) == set(ra.OPS)


def test_wrong_op_is_detected(monkeypatch):
    """Posterize keeping one bit more than the host: the op and the whole RandAugment comparisons
    both fail."""

    def posterize_one_more(x, m, sign, fill, increasing):
        shift = 7 - dre.level(m, 4)[:, None, None, None]
        return ((x.astype(jnp.int32) >> shift) << shift).astype(jnp.float32)

    dev, host = _both(
        "PosterizeTpu",
        IMAGES["rgb"],
        op=jax.jit(functools.partial(posterize_one_more, increasing=False)),
    )
    with pytest.raises(AssertionError):
        _assert_close(dev, host, max_diff=1, per_image=0.05)
    monkeypatch.setitem(dra.OPS, "PosterizeTpu", posterize_one_more)
    params = {**RECIPE, "fill": FILL, "ops": ("PosterizeTpu", "Identity")}
    images = IMAGES["rgb"].astype(np.float32) / 255.0
    u = np.random.default_rng(9).random((len(M), 8)).astype(np.float32)
    device = jax.jit(functools.partial(dra.rand_augment, **params))  # traced with the wrong op
    dev, host = _compare_rand_augment(images, u, params, device=device)
    with pytest.raises(AssertionError):
        _assert_close(dev, host, max_diff=1, per_image=0.05)


def test_module_does_not_import_tensorflow():
    code = (
        "import sys; import ssl_jax.data.device.randaugment as d; "
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'; print(len(d.OPS))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0 and out.stdout.strip() == "16", out.stderr[-2000:]
