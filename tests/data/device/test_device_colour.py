"""Device (jnp) colour ops: torchvision semantics, per-example draws, jit, host/device agreement."""

import colorsys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ssl_jax.data import recipe_ops
from ssl_jax.data.device import colour as da
from ssl_jax.data.device import recipe as device_recipe

LUMA = np.array([0.299, 0.587, 0.114])
RNG = jax.random.key(0)


def _images(n=8, h=12, w=12, lo=0.0, hi=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return jnp.asarray(rng.uniform(lo, hi, (n, h, w, 3)), jnp.float32)


def _same_image(n, h=10, w=10, lo=0.2, hi=0.6, seed=1):
    one = _images(1, h, w, lo, hi, seed)
    return jnp.broadcast_to(one, (n, h, w, 3))


N = 512  # one batch shape for (almost) every jitted call: each compile costs ~1 s on CPU
AMOUNTS = ("brightness", "contrast", "saturation", "hue")
jitter = jax.jit(da.color_jitter, static_argnames=AMOUNTS)  # p traced: no recompile per p
MOCOV2 = dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)


@jax.jit
def all_ops(x, rng, p):
    """The four ops on the same input, each with its own key (one compile for the whole test)."""
    k = jax.random.split(rng, 4)
    return {
        "color_jitter": da.color_jitter(x, k[0], p, **MOCOV2),
        "grayscale": da.grayscale(x, k[1], p),
        "gaussian_blur": da.gaussian_blur(x, k[2], p, (0.5, 2.0), 5),  # σ < 0.3: ≈ identity
        "solarize": da.solarize(x, k[3], p, 0.3),
    }


def test_shapes_dtypes_and_p():
    x = _images(N, 8, 8).at[0, 0, 0, 0].set(0.3)  # solarize threshold: inverted (>=)
    xn = np.asarray(x)
    never, always, half = (all_ops(x, RNG, p) for p in (0.0, 1.0, 0.5))
    for name in never:
        for out in (never[name], always[name], half[name]):
            assert out.shape == x.shape and out.dtype == x.dtype, name
        np.testing.assert_array_equal(never[name], xn, err_msg=name)  # p = 0: identity
        changed = lambda y: np.any(np.asarray(y) != xn, axis=(1, 2, 3))
        assert changed(always[name]).all(), name  # p = 1: every example transformed
        assert 0.4 * N < changed(half[name]).sum() < 0.6 * N, name  # p = 0.5: about half
    # Exact results of the deterministic ops.
    np.testing.assert_allclose(always["grayscale"], np.repeat((xn @ LUMA)[..., None], 3, -1), 1e-6)
    np.testing.assert_array_equal(always["solarize"], np.where(xn >= 0.3, 1 - xn, xn))
    assert always["solarize"][0, 0, 0, 0] == np.float32(1 - np.float32(0.3))
    # Per-example sigma: every blurred example differs from the others' blur of the same input.
    same = jnp.broadcast_to(x[:1], x.shape)
    blurred = np.asarray(all_ops(same, RNG, 1.0)["gaussian_blur"]).reshape(N, -1)
    assert len(np.unique(blurred.round(6), axis=0)) > 0.95 * N
    # Low-precision images keep their dtype (computed in float32 inside).
    bf = jax.jit(da.grayscale)(x.astype(jnp.bfloat16), RNG, 1.0)
    assert bf.dtype == jnp.bfloat16 and bf.shape == x.shape


def test_brightness_factor_range_and_per_example_draws():
    x = _same_image(N, 8, 8)  # values in [0.2, 0.6]: no clipping at factor 1.4
    out = np.asarray(jitter(x, RNG, 1.0, brightness=0.4))
    per_image = (out / np.asarray(x)).reshape(N, -1)
    np.testing.assert_allclose(per_image, np.repeat(per_image[:, :1], per_image.shape[1], 1), 1e-5)
    f = per_image[:, 0]  # one factor per image
    assert f.min() >= 0.6 - 1e-6 and f.max() <= 1.4 + 1e-6
    assert f.min() < 0.65 and f.max() > 1.35  # covers the range
    assert len(np.unique(f)) > 0.99 * N  # every example its own draw
    other = np.asarray(jitter(x, jax.random.key(1), 1.0, brightness=0.4))
    assert not np.allclose(other, out)  # another key, other draws


def test_adjustments_at_known_factors():
    x = _images(1)[0]
    xn = np.asarray(x, np.float64)
    gray_img = xn @ LUMA

    @jax.jit
    def run(x):
        return {
            "contrast0": da.adjust_contrast(x, 0.0),
            "saturation0": da.adjust_saturation(x, 0.0),
            "saturation1": da.adjust_saturation(x, 1.0),
            "brightness2": da.adjust_brightness(x, 2.0),
        }

    out = run(x)
    np.testing.assert_allclose(out["contrast0"], np.full(x.shape, gray_img.mean()), atol=1e-6)
    np.testing.assert_allclose(out["saturation0"], np.repeat(gray_img[..., None], 3, -1), atol=1e-6)
    np.testing.assert_allclose(out["saturation1"], xn, atol=1e-6)
    np.testing.assert_allclose(out["brightness2"], np.clip(2 * xn, 0, 1), atol=1e-6)


def test_random_order_per_example():
    """Brightness ×2 and contrast ×0.5 do not commute (clipping): both orders must occur."""
    x = _same_image(N, 8, 8, lo=0.0, hi=1.0)
    out = np.asarray(jitter(x, RNG, 1.0, brightness=(2.0, 2.0), contrast=(0.5, 0.5)))
    one = np.asarray(x[0], np.float64)
    gray_mean = lambda y: (y @ LUMA).mean()
    bright = np.clip(2 * one, 0, 1)
    b_then_c = np.clip(0.5 * bright + 0.5 * gray_mean(bright), 0, 1)
    contr = np.clip(0.5 * one + 0.5 * gray_mean(one), 0, 1)
    c_then_b = np.clip(2 * contr, 0, 1)
    assert not np.allclose(b_then_c, c_then_b)
    is_bc = np.all(np.isclose(out, b_then_c, atol=1e-5), axis=(1, 2, 3))
    is_cb = np.all(np.isclose(out, c_then_b, atol=1e-5), axis=(1, 2, 3))
    assert np.all(is_bc | is_cb)
    assert 0.35 * N < is_bc.sum() < 0.65 * N


def test_hsv_round_trip_and_hue_shift():
    px = np.random.default_rng(2).uniform(0, 1, (50, 3))
    px[:3] = [[1, 0, 0], [0.5, 0.5, 0.5], [0, 0, 0]]  # red, grey, black (s = 0 edge cases)
    to_hsv, to_rgb, hue = jax.jit(da.rgb_to_hsv), jax.jit(da.hsv_to_rgb), jax.jit(da.adjust_hue)
    hsv = np.asarray(to_hsv(jnp.asarray(px, jnp.float32)))
    ref = np.array([colorsys.rgb_to_hsv(*p) for p in px])
    np.testing.assert_allclose(hsv, ref, atol=1e-5)
    np.testing.assert_allclose(to_rgb(jnp.asarray(hsv)), px, atol=1e-5)
    np.testing.assert_allclose(hue(jnp.asarray(px, jnp.float32), 0.0), px, atol=1e-5)
    shifted = np.asarray(hue(jnp.asarray(px, jnp.float32), 1 / 3))
    ref = np.array([colorsys.hsv_to_rgb((h + 1 / 3) % 1, s, v) for h, s, v in ref])
    np.testing.assert_allclose(shifted, ref, atol=1e-5)
    np.testing.assert_allclose(shifted[0], [0, 1, 0], atol=1e-5)  # red → green


def test_colour_ops_need_three_channels():
    for fn in (
        lambda x: da.grayscale(x, RNG, 1.0),
        lambda x: da.color_jitter(x, RNG, 1.0, hue=0.1),
    ):
        with pytest.raises(ValueError, match="3-channel"):
            fn(jnp.zeros((1, 4, 4, 1)))


def test_gaussian_kernel_and_blur():
    kernel = jax.jit(da.gaussian_kernel1d, static_argnums=1)
    blur = jax.jit(da.blur)
    for sigma, size in [(0.1, 3), (1.0, 5), (2.0, 23)]:
        k = np.asarray(kernel(jnp.float32(sigma), size))
        xs = np.arange(size) - (size - 1) / 2
        ref = np.exp(-0.5 * (xs / sigma) ** 2)
        np.testing.assert_allclose(k, ref / ref.sum(), rtol=1e-5)
        np.testing.assert_allclose(k.sum(), 1.0, rtol=1e-6)
    assert [recipe_ops.blur_kernel_size(s) for s in (224, 96, 32, 28)] == [23, 9, 3, 3]
    # Separable blur == 2-D convolution with the outer-product kernel on a reflect-padded image.
    x = np.asarray(_images(1, 9, 7))[0]
    k = np.asarray(kernel(jnp.float32(1.3), 5))
    xp = np.pad(x, ((2, 2), (2, 2), (0, 0)), mode="reflect")
    k2 = np.outer(k, k)
    ref = np.zeros_like(x)
    for i in range(9):
        for j in range(7):
            ref[i, j] = np.einsum("ijc,ij->c", xp[i : i + 5, j : j + 5], k2)
    np.testing.assert_allclose(blur(jnp.asarray(x), jnp.asarray(k)), ref, atol=1e-6)
    # Tiny sigma: identity; a constant image stays constant.
    np.testing.assert_allclose(blur(jnp.asarray(x), kernel(jnp.float32(0.01), 5)), x, atol=1e-6)
    const = jnp.full(x.shape, 0.3)
    np.testing.assert_allclose(blur(const, jnp.asarray(k)), const, atol=1e-6)


RECIPE = (
    {"op": "random_resized_crop", "size": 16, "scale": (0.2, 1.0)},
    {
        "op": "color_jitter",
        "p": 0.8,
        "brightness": 0.4,
        "contrast": 0.4,
        "saturation": 0.2,
        "hue": 0.1,
    },
    {"op": "grayscale", "p": 0.2},
    {"op": "gaussian_blur", "p": 1.0, "sigma": (0.1, 2.0), "kernel_size": 0},
    {"op": "horizontal_flip", "p": 0.5},
    {"op": "solarize", "p": 0.2, "threshold": 0.5},
)
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def test_apply_recipe_jits():
    u8 = jnp.asarray(np.random.default_rng(3).integers(0, 256, (8, 16, 16, 3)), jnp.uint8)
    fn = jax.jit(lambda x, rng: device_recipe.apply_recipe(x, RECIPE, rng, MEAN, STD, jnp.bfloat16))
    out = fn(u8, RNG)
    assert out.shape == u8.shape and out.dtype == jnp.bfloat16
    assert np.all(np.isfinite(np.asarray(out, np.float32)))
    assert not np.allclose(np.asarray(out, np.float32), device_recipe.normalize(u8, MEAN, STD))
    # Host ops are skipped: a recipe of only those is plain normalisation.
    host_only = tuple(op for op in RECIPE if op["op"] in recipe_ops.HOST_OPS)
    np.testing.assert_array_equal(
        device_recipe.apply_recipe(u8, host_only, RNG, MEAN, STD),
        device_recipe.normalize(u8, MEAN, STD),
    )
    with pytest.raises(ValueError, match="unknown op 'cutout'"):
        device_recipe.apply_recipe(u8, ({"op": "cutout"},), RNG, MEAN, STD)
    with pytest.raises(ValueError, match="unknown keys \\['sigma'\\]"):
        device_recipe.apply_recipe(u8, ({"op": "solarize", "p": 1.0, "sigma": 1},), RNG, MEAN, STD)
    with pytest.raises(ValueError, match="missing keys \\['p'\\]"):
        device_recipe.apply_recipe(u8, ({"op": "grayscale"},), RNG, MEAN, STD)


# ------------------------------------------------------------------------------------------------
# Host (tf, augment.py) vs device: same distributions of the jitter's effects.
# ------------------------------------------------------------------------------------------------

N_STAT = N


def _colourfulness(x):
    """Per image: mean |x − luma(x)| over pixels and channels (scales exactly with saturation)."""
    x = np.asarray(x, np.float64)
    return np.abs(x - (x @ LUMA)[..., None]).mean(axis=(1, 2, 3))


def _host_jitter(image, **params):
    tf = pytest.importorskip("tensorflow")
    augment = pytest.importorskip("ssl_jax.data.host.augment")
    seeds = tf.random.experimental.stateless_split(tf.constant([7, 11], tf.int64), N_STAT)
    fn = tf.function(
        lambda s: tf.map_fn(
            lambda seed: augment.color_jitter(tf.constant(image), seed, **params),
            s,
            fn_output_signature=tf.float32,
        )
    )
    return fn(seeds).numpy()


def _check_same_distribution(host, device, what):
    se = np.sqrt(host.var() / len(host) + device.var() / len(device))
    assert abs(host.mean() - device.mean()) < 4 * se + 1e-6, (what, host.mean(), device.mean())
    np.testing.assert_allclose(device.var(), host.var(), rtol=0.25, err_msg=what)


@pytest.mark.slow  # imports TensorFlow
@pytest.mark.parametrize(
    "params",
    [
        dict(p=1.0, brightness=0.4),
        dict(p=1.0, saturation=0.4),
        dict(p=0.8, brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1),
    ],
    ids=["brightness", "saturation", "mocov2"],
)
def test_matches_host_augment_statistics(params):
    """Per-image brightness change (mean ratio) and saturation change (colourfulness ratio): same
    mean and variance for `augment.color_jitter` and the device op. A wrong factor range (e.g. 0.2
    for 0.4) changes the variance ~4× and fails the 25% tolerance."""
    image = np.asarray(_images(1, 8, 8, 0.35, 0.55, seed=4))[0]
    host = _host_jitter(image, **params)
    device = np.asarray(
        jitter(jnp.broadcast_to(image, (N_STAT, *image.shape)), jax.random.key(5), **params)
    )
    base = image[None]
    stats = {
        "brightness": lambda y: y.mean(axis=(1, 2, 3)) / base.mean(),
        "saturation": lambda y: _colourfulness(y) / _colourfulness(base)[0],
    }
    for what, stat in stats.items():
        _check_same_distribution(stat(host), stat(device), what)


@pytest.mark.slow  # imports TensorFlow
def test_adjustments_match_host_ops():
    """Fixed factors: the device adjustments equal the host's `colour.adjust_*` (tf) pixel for
    pixel."""
    tf = pytest.importorskip("tensorflow")
    colour = pytest.importorskip("ssl_jax.data.host.colour")
    x = np.asarray(_images(1, 8, 8, seed=6))[0]
    pairs = [
        (da.adjust_brightness, colour.adjust_brightness, 1.3),
        (da.adjust_contrast, colour.adjust_contrast, 0.7),
        (da.adjust_saturation, colour.adjust_saturation, 1.4),
        (da.adjust_hue, colour.adjust_hue, 0.1),
        (da.adjust_hue, colour.adjust_hue, -0.07),
    ]
    for ours, host, factor in pairs:
        ref = host(tf.constant(x), tf.constant(factor, tf.float32)).numpy()
        got = jax.jit(ours)(jnp.asarray(x), factor)
        np.testing.assert_allclose(got, ref, atol=2e-5, err_msg=f"{ours.__name__}({factor})")
