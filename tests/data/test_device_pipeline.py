"""The device pipeline (`config.data.pipeline = 'device'`) against the host's tf.data pipeline: the
order of the data (epoch permutations, processes, resume), 1 vs 8 devices, and the config checks.
Its views against the host's on the same uniforms: `device/test_device_recipe.py`, its crop sampler:
`device/test_device_geometry.py`."""

import os

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from ssl_jax import configs
from ssl_jax.data import device_pipeline, recipes, train_split
from ssl_jax.parallel import sharding
from tests.helpers import config_names

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# --------------------------------------------------------------------------------------------------
# The order of the data


def _order_config(batch=8, seed=3):
    c = ml_collections.ConfigDict()
    c.seed = seed
    c.global_batch_size = batch
    return c


def _take(iterator, k):
    return [next(iterator) for _ in range(k)]


def test_each_epoch_is_a_permutation_from_seed_and_epoch():
    labels = np.arange(100, dtype=np.int32) % 10
    config = _order_config(batch=8)
    batches = _take(device_pipeline.index_batches(config, labels), 24)  # 12 steps per epoch
    for epoch in range(2):
        seen = np.concatenate([b["index"] for b in batches[12 * epoch : 12 * (epoch + 1)]])
        order = device_pipeline.epoch_permutation(3, epoch, 100)
        np.testing.assert_array_equal(seen, order[:96])  # the last partial batch dropped
        assert len(set(seen.tolist())) == 96
    first = np.concatenate([b["index"] for b in batches[:12]])
    second = np.concatenate([b["index"] for b in batches[12:]])
    assert not np.array_equal(first, second)
    for b in batches:
        np.testing.assert_array_equal(b["label"], labels[b["index"]])
        assert b["index"].dtype == np.int32 and b["label"].dtype == np.int32
    other_seed = next(device_pipeline.index_batches(_order_config(seed=4), labels))
    assert not np.array_equal(other_seed["index"], batches[0]["index"])


def test_resume_mid_epoch_gives_the_uninterrupted_batches():
    labels = np.zeros(100, np.int32)
    config = _order_config()
    whole = _take(device_pipeline.index_batches(config, labels), 30)
    resumed = _take(device_pipeline.index_batches(config, labels, start_step=17), 13)
    for a, b in zip(whole[17:], resumed):
        np.testing.assert_array_equal(a["index"], b["index"])


def test_processes_feed_their_rows_of_the_global_batch():
    labels = np.zeros(100, np.int32)
    config = _order_config()
    whole = _take(device_pipeline.index_batches(config, labels, start_step=5), 10)
    parts = [
        _take(
            device_pipeline.index_batches(
                config, labels, start_step=5, process_index=p, process_count=2
            ),
            10,
        )
        for p in range(2)
    ]
    for k, batch in enumerate(whole):
        np.testing.assert_array_equal(
            batch["index"], np.concatenate([parts[0][k]["index"], parts[1][k]["index"]])
        )
    with pytest.raises(ValueError, match="not divisible"):
        next(device_pipeline.index_batches(_order_config(batch=9), labels, process_count=2))
    with pytest.raises(ValueError, match="exceeds the 100 training examples"):
        next(device_pipeline.index_batches(_order_config(batch=128), labels))


# --------------------------------------------------------------------------------------------------
# In the step: 1 vs 8 devices, channels


def _data_config(channels, recipe, name="strong"):
    return ml_collections.ConfigDict(
        dict(
            channels=channels,
            views=(name, name),
            recipes={name: recipe},
            mean=(0.5,) * channels,
            std=(0.25,) * channels,
        )
    )


def _step_views(data, table, index, devices):
    mesh = sharding.make_mesh(devices)
    table = jax.device_put(table, sharding.replicated(mesh))
    index = jax.device_put(index, sharding.batch_sharding(mesh))
    fn = jax.jit(
        lambda t, i, rng: device_pipeline.step_views(data, t, i, rng, jnp.float32),
        out_shardings=sharding.batch_sharding(mesh),
    )
    return [np.asarray(v) for v in fn(table, index, jax.random.key(11))]


def test_the_global_batch_is_the_same_on_one_and_eight_devices():
    """Each device gathers its rows from its own copy of the table and augments them with the
    example's own draws: the views of 1 and 8 devices agree (a rounding at most, from summation
    order in the resize products)."""
    assert jax.device_count() == 8
    rng = np.random.default_rng(4)
    table = rng.integers(0, 256, (50, 28, 28, 1), dtype=np.uint8)
    index = rng.permutation(50)[:16].astype(np.int32)
    data = _data_config(3, tuple(recipes.mocov2(24)))  # grey source, 3-channel views
    one = _step_views(data, table, index, jax.devices()[:1])
    eight = _step_views(data, table, index, jax.devices())
    for a, b in zip(one, eight):
        assert a.shape == (16, 24, 24, 3)
        np.testing.assert_allclose(a, b, atol=1.01 / (255 * 0.25))
        assert np.mean(a != b) < 1e-3
    assert not np.allclose(one[0], one[1])  # two views, two draws


def test_channels_are_adapted_as_the_host_does():
    tf = pytest.importorskip("tensorflow")
    pipeline = pytest.importorskip("ssl_jax.data.pipeline")
    rgb = np.random.default_rng(5).integers(0, 256, (4, 9, 7, 3), dtype=np.uint8)
    host = np.stack([pipeline.adapt_channels(tf.constant(x), 1).numpy() for x in rgb])
    np.testing.assert_array_equal(np.asarray(train_split.adapt_channels(rgb, 1)), host)
    grey = rgb[..., :1]
    np.testing.assert_array_equal(
        np.asarray(train_split.adapt_channels(grey, 3)), np.repeat(grey, 3, -1)
    )


# --------------------------------------------------------------------------------------------------
# Config checks and the small-data configs


SMALL_DATA = ("fashion_mnist", "color_fashion_mnist", "cifar10", "cifar100", "stl10")


def _small_data_configs():
    return [n for n in config_names() if any(n.endswith(f"_{d}") for d in SMALL_DATA)]


def test_every_small_data_config_accepts_the_device_pipeline():
    """Every method's Fashion-MNIST / colour / CIFAR / STL-10 config passes the device pipeline's
    checks (every recipe op has a device version)."""
    names = _small_data_configs()
    assert len(names) >= 30
    for name in names:
        config = configs.load(os.path.join(ROOT, "configs", f"{name}.py:runlocal"))
        config.data.pipeline = "device"
        device_pipeline.check_config(config.data)


@pytest.mark.slow
def test_every_small_data_recipe_runs_in_the_step():
    """Each distinct recipe set of those configs compiles and gives finite views of the right
    shapes from a random table of the dataset's image size."""
    seen = set()
    for name in _small_data_configs():
        config = configs.load(os.path.join(ROOT, "configs", f"{name}.py:runlocal"))
        data = config.data
        key = repr((data.channels, data.image_size, [tuple(data.recipes[v]) for v in data.views]))
        if key in seen:
            continue
        seen.add(key)
        side = 96 if data.name == "stl10" else (28 if data.name == "fashion_mnist" else 32)
        source_channels = 1 if data.name == "fashion_mnist" else 3
        table = np.random.default_rng(6).integers(
            0, 256, (8, side, side, source_channels), np.uint8
        )
        views = device_pipeline.step_views(
            data, table, jnp.arange(4), jax.random.key(0), jnp.float32
        )
        assert len(views) == len(data.views), name
        for v, view in zip(data.views, views):
            assert view.shape[0] == 4 and view.shape[-1] == data.channels, (name, v, view.shape)
            assert np.all(np.isfinite(np.asarray(view))), (name, v)


def _config(**data):
    c = configs.base_config()
    c.data.update(data)
    return c.data


def test_config_errors_name_the_problem(monkeypatch):
    with pytest.raises(configs.ConfigError, match="data.pipeline='gpu'; allowed"):
        device_pipeline.check_config(_config(pipeline="gpu"))
    with pytest.raises(configs.ConfigError, match="imagenet2012 is not loaded that way"):
        device_pipeline.check_config(
            _config(pipeline="device", recipes={"mocov2": recipes.mocov2(224)})
        )
    device_pipeline.check_config(_config(pipeline="auto", recipes={"mocov2": recipes.mocov2(224)}))


def test_a_split_too_large_for_the_device_is_refused(monkeypatch):
    images = np.zeros((100, 28, 28, 1), np.uint8)
    monkeypatch.setattr(
        device_pipeline, "_arrays", lambda config: (images, np.zeros(100, np.int32))
    )
    monkeypatch.setattr(device_pipeline, "device_memory", lambda device=None: 100_000)
    c = configs.base_config()
    c.data.name = "fashion_mnist"
    mesh = sharding.make_mesh(jax.devices()[:1])
    with pytest.raises(
        configs.ConfigError, match=r"is 0\.00 GiB \(100 images of \(28, 28, 1\)\); one device holds"
    ):
        device_pipeline.load(c, mesh)
    monkeypatch.setattr(device_pipeline, "device_memory", lambda device=None: 10**9)
    placed = device_pipeline.load(c, mesh)
    assert placed.num_examples == 100 and placed.images.shape == (100, 28, 28, 1)


def test_auto_follows_the_dataset_the_recipes_and_the_memory(monkeypatch):
    images = np.zeros((100, 28, 28, 1), np.uint8)
    monkeypatch.setattr(device_pipeline, "split_shape", lambda config: images.shape)
    c = configs.base_config()
    c.data.pipeline = "auto"
    assert device_pipeline.resolve(c) == "tfdata"  # imagenet2012: tf.data only
    c.data.name = "fashion_mnist"
    c.data.recipes = {"mocov2": recipes.mocov2(28)}
    monkeypatch.setattr(device_pipeline, "device_memory", lambda device=None: 4 * images.nbytes)
    assert device_pipeline.resolve(c) == "device"
    monkeypatch.setattr(device_pipeline, "device_memory", lambda device=None: 4 * images.nbytes - 1)
    assert device_pipeline.resolve(c) == "tfdata"  # more than a quarter of the device
    c.data.pipeline = "device"
    assert device_pipeline.resolve(c) == "device"
    c.data.pipeline = "tfdata"
    assert device_pipeline.resolve(c) == "tfdata"
    c.data.pipeline = "auto"
    c.data.recipes = {"mocov2": recipes.infomin(28)}
    assert jax.default_backend() == "cpu"
    assert device_pipeline.resolve(c) == "tfdata"  # RandAugment is slower on the device on CPU
