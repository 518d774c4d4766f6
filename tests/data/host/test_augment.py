"""Host augmentation ops: torchvision semantics against numpy references, ranges, determinism."""

import colorsys
import math

import numpy as np
import pytest
import tensorflow as tf

from ssl_jax.data import recipe_ops, recipes
from ssl_jax.data.host import augment, colour, geometry

LUMA = np.array([0.299, 0.587, 0.114])


def _seed(k: int) -> tf.Tensor:
    return tf.constant([k, 7], tf.int64)


def _crop_params(seed, height, width, scale, ratio):
    """`(top, left, h, w)` scalars that `augment.random_resized_crop(image, seed)` uses."""
    u = tf.random.stateless_uniform([1, recipe_ops.NUM_DRAWS["random_resized_crop"]], seed)
    return tuple(v[0] for v in geometry.rrc_params(u, height, width, scale, ratio))


def _images(n=4, h=16, w=16, c=3, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0, 1, (n, h, w, c)).astype(np.float32)


def _torchvision_rrc(rng, height, width, scale, ratio):
    """numpy port of torchvision `RandomResizedCrop.get_params`."""
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target_area = area * rng.uniform(scale[0], scale[1])
        aspect = math.exp(rng.uniform(*log_ratio))
        w = int(round(math.sqrt(target_area * aspect)))
        h = int(round(math.sqrt(target_area / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return rng.integers(0, height - h + 1), rng.integers(0, width - w + 1), h, w
    in_ratio = width / height
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        h, w = height, int(round(height * max(ratio)))
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


@pytest.mark.parametrize("height, width", [(224, 224), (60, 200)])
def test_random_resized_crop_params_match_torchvision_statistics(height, width):
    scale, ratio, n = (0.2, 1.0), (3 / 4, 4 / 3), 4000
    u = tf.random.stateless_uniform([n, recipe_ops.NUM_DRAWS["random_resized_crop"]], _seed(1))
    top, left, h, w = (v.numpy() for v in geometry.rrc_params(u, height, width, scale, ratio))
    assert (top >= 0).all() and (left >= 0).all()
    assert (top + h <= height).all() and (left + w <= width).all()
    area = h * w / (height * width)
    aspect = w / h
    found = (area >= scale[0] - 0.02) & (area <= scale[1] + 1e-9)
    assert found.mean() > 0.9  # the rest: centre-crop fallbacks
    # Rounding to integers moves the ratio only slightly outside `ratio`.
    assert (aspect[found] > ratio[0] * 0.95).all() and (aspect[found] < ratio[1] * 1.05).all()
    rng = np.random.default_rng(0)
    ref = np.array([_torchvision_rrc(rng, height, width, scale, ratio) for _ in range(n)])
    ref_area = ref[:, 2] * ref[:, 3] / (height * width)
    ref_aspect = ref[:, 3] / ref[:, 2]
    for ours, theirs in ((area, ref_area), (np.log(aspect), np.log(ref_aspect))):
        se = math.sqrt(ours.var() / n + theirs.var() / n)
        assert abs(ours.mean() - theirs.mean()) < 4 * se + 1e-3
    # Offsets are uniform over the valid range: mean relative offset about 1/2.
    free = (height - h) > 0
    assert abs((top[free] / (height - h[free])).mean() - 0.5) < 0.05


def test_random_resized_crop_fallback_is_centred_and_clamped():
    # Ratios in (2, 3) cannot fit a large area in a square: fallback to w = W, h = round(W / 2).
    top, left, h, w = _crop_params(_seed(3), 40, 40, (0.95, 1.0), (2.0, 3.0))
    assert (int(h), int(w), int(top), int(left)) == (20, 40, 10, 0)
    top, left, h, w = _crop_params(_seed(3), 10, 100, (0.95, 1.0), (1.0, 2.0))
    assert (int(h), int(w), int(top), int(left)) == (10, 20, 0, 40)


@pytest.mark.parametrize("antialias", [True, False])
@pytest.mark.parametrize("size", [24, 9])
def test_batched_crop_resize_equals_crop_then_tf_resize(antialias, size):
    images = _images(n=6, h=20, w=30)
    u = tf.random.stateless_uniform([6, recipe_ops.NUM_DRAWS["random_resized_crop"]], _seed(2))
    params = dict(size=size, scale=(0.1, 1.0), antialias=antialias)
    out = augment.BATCH_OPS["random_resized_crop"](tf.constant(images), u, **params).numpy()
    top, left, h, w = (
        v.numpy() for v in geometry.rrc_params(u, 20, 30, (0.1, 1.0), (3 / 4, 4 / 3))
    )
    for k in range(6):
        crop = images[k, top[k] : top[k] + h[k], left[k] : left[k] + w[k]]
        ref = tf.image.resize(crop, (size, size), antialias=antialias).numpy()
        np.testing.assert_allclose(out[k], ref, atol=2e-5)


def test_resize_and_center_crop_follow_torchvision():
    image = tf.constant(_images(1, 20, 40)[0])
    assert augment.resize(image, _seed(0), size=16).shape == (16, 32, 3)
    assert augment.resize(tf.transpose(image, [1, 0, 2]), _seed(0), size=10).shape == (20, 10, 3)
    assert augment.resize(image, _seed(0), size=(5, 7)).shape == (5, 7, 3)
    x = np.arange(25, dtype=np.float32).reshape(5, 5, 1)
    out = augment.center_crop(tf.constant(x), _seed(0), size=2).numpy()
    np.testing.assert_array_equal(out[..., 0], x[2:4, 2:4, 0])  # round(1.5) = 2, as torchvision
    padded = augment.center_crop(tf.constant(x), _seed(0), size=(7, 6)).numpy()[..., 0]
    assert padded.shape == (7, 6) and padded[0].sum() == 0 and padded[1, 0] == 0
    np.testing.assert_array_equal(padded[1:6, 0:5], x[..., 0])


def test_horizontal_flip_probability():
    x = tf.constant(_images(1)[0])
    flips = [
        bool(
            np.array_equal(augment.horizontal_flip(x, _seed(k), p=0.5).numpy(), x.numpy()[:, ::-1])
        )
        for k in range(200)
    ]
    assert 0.35 < np.mean(flips) < 0.65
    assert np.array_equal(augment.horizontal_flip(x, _seed(0), p=0.0).numpy(), x.numpy())


def test_color_jitter_parameter_ranges():
    u = tf.random.stateless_uniform([5000, 9], _seed(4))
    apply_u, factors, order = colour.color_jitter_params(u, 0.4, 0.8, 1.5, 0.1)
    factors, order = factors.numpy(), order.numpy()
    for k, (lo, hi) in enumerate([(0.6, 1.4), (0.2, 1.8), (0.0, 2.5), (-0.1, 0.1)]):
        assert factors[:, k].min() >= lo and factors[:, k].max() <= hi
        assert abs(factors[:, k].mean() - (lo + hi) / 2) < 0.03 * (hi - lo)
    assert (np.sort(order, axis=1) == np.arange(4)).all()  # permutations
    first = np.bincount(order[:, 0], minlength=4) / len(order)
    assert np.allclose(first, 0.25, atol=0.03)
    assert len({tuple(r) for r in order}) == 24


def test_colour_adjustments_match_torchvision_formulas():
    x = _images(3, 6, 5)
    f = np.array([0.5, 1.3, 2.0], np.float32)
    gray = (x * LUMA).sum(-1, keepdims=True)
    np.testing.assert_allclose(
        colour.adjust_brightness(tf.constant(x), f).numpy(),
        np.clip(x * f[:, None, None, None], 0, 1),
        atol=1e-6,
    )
    mean = gray.mean(axis=(1, 2, 3), keepdims=True)
    fb = f[:, None, None, None]
    np.testing.assert_allclose(
        colour.adjust_contrast(tf.constant(x), f).numpy(),
        np.clip(fb * x + (1 - fb) * mean, 0, 1),
        atol=1e-6,
    )
    np.testing.assert_allclose(
        colour.adjust_saturation(tf.constant(x), f).numpy(),
        np.clip(fb * x + (1 - fb) * gray, 0, 1),
        atol=1e-6,
    )
    delta = np.array([0.1, -0.25, 0.45], np.float32)
    ref = np.empty_like(x)
    for n in range(3):
        for i in range(6):
            for j in range(5):
                h, s, v = colorsys.rgb_to_hsv(*x[n, i, j])
                ref[n, i, j] = colorsys.hsv_to_rgb((h + delta[n]) % 1.0, s, v)
    np.testing.assert_allclose(colour.adjust_hue(tf.constant(x), delta).numpy(), ref, atol=1e-5)


def test_color_jitter_order_is_random_per_example():
    # Brightness then contrast differs from contrast then brightness; each output must be one of the
    # two orders, and both must occur.
    x = np.tile(_images(1, 4, 4)[:1], (64, 1, 1, 1))
    u = tf.random.stateless_uniform([64, 9], _seed(5))
    out = augment.BATCH_OPS["color_jitter"](
        tf.constant(x), u, p=1.0, brightness=0.9, contrast=0.9
    ).numpy()
    _, factors, order = colour.color_jitter_params(u, 0.9, 0.9, 0.0, 0.0)
    factors, order = factors.numpy(), order.numpy()
    seen = set()
    for k in range(64):
        b, c = factors[k, 0], factors[k, 1]
        bc = colour.adjust_contrast(colour.adjust_brightness(x[k : k + 1], [b]), [c]).numpy()
        cb = colour.adjust_brightness(colour.adjust_contrast(x[k : k + 1], [c]), [b]).numpy()
        first = [o for o in order[k] if o in (0, 1)][0]
        np.testing.assert_allclose(out[k], (bc if first == 0 else cb)[0], atol=1e-6)
        seen.add(first)
    assert seen == {0, 1}


def test_color_jitter_probability_and_identity():
    x = _images(32, 8, 8)
    u = tf.random.stateless_uniform([32, 9], _seed(6))
    params = dict(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)
    np.testing.assert_array_equal(
        augment.BATCH_OPS["color_jitter"](x, u, p=0.0, **params).numpy(), x
    )
    np.testing.assert_array_equal(augment.BATCH_OPS["color_jitter"](x, u, p=1.0).numpy(), x)
    out = augment.BATCH_OPS["color_jitter"](x, u, p=0.5, **params).numpy()
    changed = np.abs(out - x).max(axis=(1, 2, 3)) > 0
    np.testing.assert_array_equal(changed, u.numpy()[:, 0] < 0.5)


def test_grayscale_and_solarize_exact():
    x = _images(8, 5, 5)
    u = tf.constant(np.linspace(0.01, 0.99, 8, dtype=np.float32)[:, None])
    gray = augment.BATCH_OPS["grayscale"](x, u, p=0.5).numpy()
    ref = np.repeat((x * LUMA).sum(-1, keepdims=True), 3, axis=-1)
    for k in range(8):
        np.testing.assert_allclose(gray[k], ref[k] if u[k, 0] < 0.5 else x[k], atol=1e-7)
    sol = augment.BATCH_OPS["solarize"](x, u, p=0.5, threshold=0.4).numpy()
    for k in range(8):
        expected = np.where(x[k] >= 0.4, 1.0 - x[k], x[k]) if u[k, 0] < 0.5 else x[k]
        np.testing.assert_array_equal(sol[k], expected)
    one = tf.constant(np.array([[[0.2], [0.5]], [[0.7], [1.0]]], np.float32))
    np.testing.assert_allclose(
        augment.solarize(one, _seed(0), p=1.0, threshold=0.5).numpy()[..., 0],
        [[0.2, 0.5], [0.3, 0.0]],
    )


def _numpy_blur(x, kernel):
    r = len(kernel) // 2
    pad = np.pad(x, ((r, r), (r, r), (0, 0)), mode="reflect")
    rows = sum(kernel[t] * pad[t : t + x.shape[0]] for t in range(len(kernel)))
    return sum(kernel[t] * rows[:, t : t + x.shape[1]] for t in range(len(kernel)))


def test_gaussian_blur_matches_torchvision_kernel():
    assert [recipe_ops.blur_kernel_size(s) for s in (224, 96, 32, 28, 5)] == [23, 9, 3, 3, 3]
    sigma = np.array([0.7, 1.9], np.float32)
    kernels = colour.gaussian_kernel1d(sigma, 5).numpy()
    xs = np.arange(5) - 2.0
    for k, s in enumerate(sigma):
        ref = np.exp(-0.5 * (xs / s) ** 2)
        np.testing.assert_allclose(kernels[k], ref / ref.sum(), atol=1e-6)
    x = _images(2, 12, 10)
    out = colour.blur(tf.constant(x), kernels).numpy()
    for k in range(2):
        np.testing.assert_allclose(out[k], _numpy_blur(x[k], kernels[k]), atol=1e-5)
    constant = np.full((1, 9, 9, 3), 0.3, np.float32)
    np.testing.assert_allclose(
        augment.gaussian_blur(constant[0], _seed(1), p=1.0, sigma=(2, 2)), constant[0], atol=1e-6
    )
    u = tf.constant([[0.9, 0.5], [0.1, 0.5]], tf.float32)  # first not blurred, second blurred
    out = augment.BATCH_OPS["gaussian_blur"](x, u, p=0.5, sigma=(1.0, 1.0), kernel_size=3).numpy()
    np.testing.assert_array_equal(out[0], x[0])
    np.testing.assert_allclose(
        out[1], _numpy_blur(x[1], colour.gaussian_kernel1d([1.0], 3).numpy()[0]), atol=1e-5
    )
    # p = 0.5 on a batch whose draws skip every example (empty partition).
    skip = tf.constant([[0.9, 0.5], [0.8, 0.5]], tf.float32)
    np.testing.assert_array_equal(
        augment.BATCH_OPS["gaussian_blur"](x, skip, p=0.5, sigma=(1, 2)).numpy(), x
    )


def test_apply_recipe_deterministic_and_batched_equals_single():
    images = (_images(6, 32, 32) * 255).astype(np.uint8)
    recipe = recipes.mocov2(24) + ({"op": "solarize", "p": 0.5, "threshold": 0.5},)
    single = [
        augment.apply_recipe(tf.constant(im), recipe, _seed(k)).numpy()
        for k, im in enumerate(images)
    ]
    again = [
        augment.apply_recipe(tf.constant(im), recipe, _seed(k)).numpy()
        for k, im in enumerate(images)
    ]
    assert all(s.shape == (24, 24, 3) and s.dtype == np.uint8 for s in single)
    assert all(np.array_equal(a, b) for a, b in zip(single, again))
    assert not np.array_equal(
        single[0], augment.apply_recipe(tf.constant(images[0]), recipe, _seed(99)).numpy()
    )
    u = tf.stack([augment.draw(recipe, _seed(k)) for k in range(6)])
    batched = augment.apply_ops_uint8(tf.constant(images), recipe, u).numpy()
    diff = np.abs(batched.astype(int) - np.stack(single).astype(int))
    assert diff.max() <= 1 and (diff > 0).mean() < 1e-3  # float summation order only


def test_gray_source_recipe_and_channel_checks():
    image = tf.constant((_images(1, 28, 28, c=1)[0] * 255).astype(np.uint8))
    out = augment.apply_recipe(image, recipes.fashion_mnist_default(20), _seed(0))
    assert out.shape == (20, 20, 1) and out.dtype == tf.uint8
    recipe_ops.validate_recipe("fm", recipes.fashion_mnist_default(28), channels=1)
    with pytest.raises(ValueError, match=r"recipe 'moco' op 1 \(color_jitter\): saturation"):
        recipe_ops.validate_recipe("moco", recipes.mocov2(28), channels=1)
    with pytest.raises(ValueError, match=r"recipe 'g' op 0 \(grayscale\)"):
        recipe_ops.validate_recipe("g", ({"op": "grayscale", "p": 0.2},), channels=1)
    with pytest.raises(ValueError, match="hue needs 3-channel"):
        augment.color_jitter(tf.zeros([4, 4, 1]), _seed(0), p=1.0, hue=0.1)


@pytest.mark.parametrize(
    "recipe, message",
    [
        (({"op": "rotate", "p": 0.5},), "unknown op 'rotate'"),
        (({"op": "horizontal_flip"},), r"missing \['p'\]"),
        (({"op": "horizontal_flip", "p": 0.5, "prob": 1},), r"unknown keys \['prob'\]"),
        (({"op": "horizontal_flip", "p": 1.5},), "must be in"),
        (({"op": "random_resized_crop", "size": 8, "scale": (0.5, 0.2)},), "scale"),
        (({"op": "gaussian_blur", "p": 0.5, "sigma": (0.1, 2.0), "kernel_size": 4},), "odd"),
        (({"op": "solarize", "p": 0.5, "threshold": 128},), "threshold"),
        ("random_resized_crop", "sequence of op dicts"),
    ],
)
def test_validate_recipe_messages(recipe, message):
    with pytest.raises(ValueError, match=message):
        recipe_ops.validate_recipe("r", recipe, channels=3)
