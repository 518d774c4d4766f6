"""`data.device_crops`: the host decodes once and sends each image on a canvas with every view's
crop box and flip; `canvas.cut_views` cuts the views in the step. Checked against the host
pipeline's own views (TF's per-image crop and antialiased resize) for the same seed."""

import itertools

import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from ssl_jax.config_checks import ConfigError
from ssl_jax.data import pipeline, recipes
from ssl_jax.data.device import canvas, checks
from ssl_jax.data.host import geometry
from tests.data.data_helpers import make_config

# sizes (w, h): crops of these are downscaled, upscaled (17 × 17, 20 × 30) or both, one per axis
SIZES = [(20, 30), (64, 48), (17, 17), (200, 180), (40, 40), (33, 90)]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("photos")
    rng = np.random.default_rng(0)
    for k, (w, h) in enumerate(SIZES):
        image = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        Image.fromarray(image).save(path / f"{k}.png")
    return str(path)


def _config(folder, canvas):
    c = make_config(
        folder,
        global_batch_size=2,
        name="image_folder",
        views=("weak", "weak"),
        recipes={"weak": recipes.weak(16)},
    )
    c.data.device_ops = True
    c.data.device_crops = canvas
    return c


def test_views_cut_on_the_device_are_the_host_views(folder):
    config = _config(folder, 0)
    host = list(itertools.islice(pipeline.train_iterator(config), 6))
    cut = list(itertools.islice(pipeline.train_iterator(_config(folder, 256)), 6))
    equal = total = 0
    for h, c in zip(host, cut):
        np.testing.assert_array_equal(h["index"], c["index"])
        assert c["canvas"].shape == (2, 256, 256, 3) and c["boxes"].shape == (2, 2, 4)
        views = canvas.batch_views(config.data, {k: jnp.asarray(v) for k, v in c.items()})
        for host_view, device_view in zip(h["views"], views):
            diff = np.abs(np.asarray(device_view, np.int32) - host_view.astype(np.int32))
            assert diff.max() <= 1  # the separable resize's rounding, a grey level at most
            equal += int((diff == 0).sum())
            total += diff.size
    assert equal / total > 0.9
    flips = np.concatenate([c["flips"] for c in cut]).ravel()
    assert flips.any() and not flips.all()


def test_device_crop_batches_resume_exactly(folder):
    config = _config(folder, 256)
    whole = list(itertools.islice(pipeline.train_iterator(config), 4))
    resumed = list(itertools.islice(pipeline.train_iterator(config, start_step=2), 2))
    for a, b in zip(whole[2:], resumed):
        for key in ("canvas", "boxes", "flips", "index"):
            np.testing.assert_array_equal(a[key], b[key])


def test_fit_canvas_pads_small_images_and_shrinks_large_ones():
    rng = np.random.default_rng(1)
    small = rng.integers(0, 256, (30, 20, 3), dtype=np.uint8)
    canvas, height, width = geometry.fit_canvas(tf.constant(small), 64)
    assert (int(height), int(width)) == (30, 20)
    np.testing.assert_array_equal(canvas.numpy()[:30, :20], small)
    assert not canvas.numpy()[30:].any() and not canvas.numpy()[:, 20:].any()

    large = np.tile(np.linspace(0, 255, 300, dtype=np.float32)[None, :, None], (200, 1, 3))
    canvas, height, width = geometry.fit_canvas(tf.constant(large.astype(np.uint8)), 64)
    assert (int(height), int(width)) == (43, 64)  # aspect kept: 200 × 300 → 42.7 × 64
    row = canvas.numpy()[20, :64, 0].astype(float)
    assert np.all(np.diff(row) >= 0) and abs(row.mean() - 127.5) < 3  # the same ramp, shrunk
    assert not canvas.numpy()[43:].any()


def _data(**kw):
    data = ml_collections.ConfigDict(
        {
            "device_ops": True,
            "device_crops": 64,
            "views": ("a",),
            "recipes": {"a": tuple(recipes.weak(16))},
        }
    )
    data.update(kw)
    return data


def test_config_errors_name_the_problem():
    checks.check_device_crops(_data())
    with pytest.raises(ConfigError, match="needs config.data.device_ops=True"):
        checks.check_device_crops(_data(device_ops=False))
    with pytest.raises(ConfigError, match="data.device_crops"):
        checks.check_device_crops(_data(device_crops=-1))
    centre = ({"op": "center_crop", "size": 16},)
    with pytest.raises(ConfigError, match="must start with its only random_resized_crop"):
        checks.check_device_crops(_data(recipes={"a": tuple(recipes.weak(16)) + centre}))
    assert checks.device_crop_side(_data(device_ops=False)) == 0
    assert checks.device_crop_side(_data()) == 64


def test_cut_views_on_eight_devices_equal_one_device():
    """Each example's views are cut from its own canvas: sharding the batch over 8 devices changes
    only the matrix products' summation order, so at most a rare grey level where a value sits on a
    rounding boundary (1 of 12,288 here)."""
    import jax

    from ssl_jax.parallel import sharding

    rng = np.random.default_rng(2)
    b, side, recipe = 16, 40, tuple(recipes.weak(16))
    h, w = rng.integers(8, 41, (b, 2)), rng.integers(8, 41, (b, 2))
    batch = {
        "canvas": rng.integers(0, 256, (b, side, side, 3), dtype=np.uint8),
        "boxes": np.stack(
            [rng.integers(0, side - h + 1), rng.integers(0, side - w + 1), h, w], -1
        ).astype(np.int32),
        "flips": rng.random((b, 2)) < 0.5,
    }
    cut = jax.jit(lambda x: canvas.cut_views(**x, recipes=(recipe, recipe)))
    one = cut(sharding.host_to_global(batch, sharding.make_mesh(jax.devices()[:1])))
    eight = cut(sharding.host_to_global(batch, sharding.make_mesh(jax.devices())))
    assert len(eight[0].sharding.device_set) == 8
    for a, c in zip(one, eight):
        diff = np.abs(np.asarray(a, np.int32) - np.asarray(c, np.int32))
        assert diff.max() <= 1 and (diff > 0).mean() < 1e-3


def test_batch_views_outside_a_step_compile_once():
    """View learning, view studies and pictures call `batch_views` eagerly, once per batch: the cut
    is one jitted program per view geometry, traced once and reused, and equals the cut traced
    inside another jit (as in the train step)."""
    import jax

    data = ml_collections.ConfigDict(
        {
            "views": ("a", "b"),
            "recipes": {"a": tuple(recipes.weak(16)), "b": tuple(recipes.weak(12))},
        }
    )

    def batch(seed):
        r = np.random.default_rng(seed)
        return {
            "canvas": r.integers(0, 256, (4, 24, 24, 3), dtype=np.uint8),
            "boxes": np.tile(np.array([[2, 3, 16, 20]], np.int32), (4, 2, 1)),
            "flips": r.random((4, 2)) < 0.5,
        }

    canvas._cut.clear_cache()
    first = canvas.batch_views(data, batch(0))
    second = canvas.batch_views(data, batch(1))
    assert canvas._cut._cache_size() == 1
    assert [v.shape for v in first] == [(4, 16, 16, 3), (4, 12, 12, 3)]
    inside = jax.jit(lambda b: canvas.batch_views(data, b))(batch(1))
    for a, b in zip(second, inside):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.array_equal(np.asarray(first[0]), np.asarray(second[0]))
