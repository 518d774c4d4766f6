"""color_fashion_mnist: generated offline from small IDX folders (and the real test split when
installed): shapes, labels, determinism, prefix stability, tint modes, cache reuse and regeneration,
option checks before any compile."""

import colorsys
import os

import ml_collections
import numpy as np
import pytest

from configs import common
from ssl_jax import validation
from ssl_jax.config_checks import ConfigError
from ssl_jax.data import color_fashion_mnist as cfm
from ssl_jax.data import datasets, fashion_mnist, pipeline, recipes
from tests.data.data_helpers import make_fashion_dir
from tests.helpers import tiny_config

pytest.importorskip("skimage")
REAL_FASHION = os.path.isfile(
    os.path.join(fashion_mnist.FASHION_MNIST_DIR, "t10k-images-idx3-ubyte.gz")
)


@pytest.fixture(autouse=True)
def _fresh_caches():
    datasets.clear_cache()
    yield
    datasets.clear_cache()


@pytest.fixture(scope="module")
def fashion_dir(tmp_path_factory):
    return make_fashion_dir(str(tmp_path_factory.mktemp("fashion")), num_train=48, num_test=24)


def _dc(data_dir: str, cache_dir: str, **options) -> ml_collections.ConfigDict:
    return ml_collections.ConfigDict(
        dict(
            name="color_fashion_mnist",
            data_dir=data_dir,
            channels=3,
            color_fashion_mnist=dict(cache_dir=cache_dir, **options),
        )
    )


def _arrays(dc, split="train"):
    src = datasets.open_source(dc, split)
    batch = next(iter(src.read(0, src.num_examples).batch(src.num_examples)))
    return batch["image"].numpy(), batch["label"].numpy(), src


def test_shapes_labels_splits_and_determinism(fashion_dir, tmp_path):
    dc = _dc(fashion_dir, str(tmp_path / "a"))
    for split, n in (("train", 48), ("test", 24)):
        images, labels, src = _arrays(dc, split)
        assert images.shape == (n, 32, 32, 3) and images.dtype == np.uint8
        assert src.channels == 3 and src.has_labels and src.lookup is not None
        assert datasets.num_examples(dc, split) == n and datasets.has_labels(dc, split)
        _, fashion_labels = fashion_mnist.read_split(*datasets._fashion_paths(dc, split))
        np.testing.assert_array_equal(labels, fashion_labels)
    datasets.clear_cache()
    again, _, _ = _arrays(_dc(fashion_dir, str(tmp_path / "b")))  # regenerated elsewhere
    first, _, _ = _arrays(dc)
    np.testing.assert_array_equal(again, first)
    other, _, _ = _arrays(_dc(fashion_dir, str(tmp_path / "c"), seed=1))
    assert (other != first).mean() > 0.5
    assert len({im.tobytes() for im in first}) == len(first)
    with pytest.raises(datasets.DataError, match="color_fashion_mnist has splits"):
        datasets.open_source(dc, "validation")


def test_generate_prefix_stable_and_tint_modes(fashion_dir):
    items, _ = fashion_mnist.read_split(*datasets._fashion_paths(_dc(fashion_dir, ""), "train"))
    options = cfm.check_config(None)
    full = cfm.generate(items, options, "train")
    head = cfm.generate(items[:5], options, "train")
    for key in full:
        np.testing.assert_array_equal(head[key], full[key][:5])
    fixed = cfm.generate(items[:8], cfm.check_config({"tint": "fixed", "hue": 0.3}), "train")
    np.testing.assert_allclose(fixed["hue"], 0.3)
    np.testing.assert_array_equal(fixed["photo"], full["photo"][:8])  # same backgrounds
    bg = cfm.generate(items[:8], cfm.check_config({"tint": "background"}), "train")
    side = round(32 / 0.25)
    bank = cfm.photo_bank(tuple(cfm.PHOTOS), side)
    for i in range(8):
        crop = bank[
            bg["photo"][i], bg["top"][i] : bg["top"][i] + 32, bg["left"][i] : bg["left"][i] + 32
        ]
        expected = (cfm.mean_hue(crop.mean((0, 1))) + 0.5) % 1.0
        assert abs(bg["hue"][i] - expected) < 1e-5
    # an opaque item is all tint, a transparent one all photo crop
    ends = np.stack([np.full((28, 28), 255, np.uint8), np.zeros((28, 28), np.uint8)])
    out = cfm.generate(ends, cfm.check_config({"tint": "fixed", "hue": 0.3}), "train")
    np.testing.assert_array_equal(
        out["image"][0],
        np.broadcast_to(np.round(cfm.hue_to_rgb(0.3) * 255).astype(np.uint8), (32, 32, 3)),
    )
    p, t, x = out["photo"][1], out["top"][1], out["left"][1]
    np.testing.assert_array_equal(
        out["image"][1], np.round(bank[p, t : t + 32, x : x + 32] * 255).astype(np.uint8)
    )
    one = cfm.generate(items[:8], cfm.check_config({"size": 64}), "train")
    assert one["image"].shape == (8, 64, 64, 3)


def test_hue_helpers_match_colorsys():
    hues = np.linspace(0, 1, 25, endpoint=False)
    ref = np.array([colorsys.hsv_to_rgb(h, 1.0, 1.0) for h in hues])
    np.testing.assert_allclose(cfm.hue_to_rgb(hues), ref, atol=1e-6)
    prim = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 1, 1], [0, 0, 1], [1, 0, 1]], float)
    np.testing.assert_allclose(cfm.mean_hue(prim), np.arange(6) / 6, atol=1e-6)


def test_cache_reused_and_regenerated_on_option_change(fashion_dir, tmp_path, monkeypatch):
    cache = str(tmp_path)
    images, _, _ = _arrays(_dc(fashion_dir, cache, size=32))
    files = sorted(os.listdir(cache))
    assert len(files) == 1 and files[0].startswith("color_fashion_mnist_train_32px_")
    datasets.clear_cache()
    calls = []
    real_generate = cfm.generate
    monkeypatch.setattr(cfm, "generate", lambda *a: calls.append(a) or real_generate(*a))
    cached, _, _ = _arrays(_dc(fashion_dir, cache, size=32))
    np.testing.assert_array_equal(cached, images)
    assert not calls  # read from the .npz
    datasets.clear_cache()
    _arrays(_dc(fashion_dir, cache, size=32, tint="background"))
    assert len(calls) == 1 and len(os.listdir(cache)) == 2


@pytest.mark.parametrize(
    "options, match",
    [
        ({"size": 48}, "size=48; allowed: \\(32, 64\\)"),
        ({"tint": "red"}, "tint='red'"),
        ({"hue": 1.5}, "hue=1.5"),
        ({"backgrounds": ("lena",)}, "backgrounds="),
        ({"background_crop": 0.0}, "background_crop=0.0"),
        ({"colour": 1}, "unknown keys \\['colour'\\]"),
    ],
)
def test_bad_options_raise_config_error(options, match):
    with pytest.raises(ConfigError, match=match):
        cfm.check_config(options)


def test_config_validation_and_pipeline(fashion_dir, tmp_path):
    c = tiny_config("mocov2")
    common.color_fashion_mnist_data(c, size=32)
    c.data.data_dir = fashion_dir
    c.data.color_fashion_mnist.cache_dir = str(tmp_path)
    c.data.recipes = ml_collections.ConfigDict({"cmc": recipes.cmc(16)})
    c.data.views = ("cmc", "cmc")
    c.data.train_subset = 16
    validation.validate(c, num_devices=8)
    bad = ml_collections.ConfigDict(c.to_dict())
    bad.data.color_fashion_mnist.tint = "blue"
    with pytest.raises(ConfigError, match="color_fashion_mnist.tint"):
        validation.validate(bad, num_devices=8)
    batch = next(pipeline.train_iterator(c))
    assert [v.shape for v in batch["views"]] == [(16, 16, 16, 3)] * 2
    assert batch["views"][0].dtype == np.uint8  # the colour space runs on the device


@pytest.mark.skipif(not REAL_FASHION, reason="dataset-fashion-mnist not installed")
def test_real_test_split_keeps_fashion_mnist_labels(tmp_path):
    dc = _dc("", str(tmp_path))
    images, labels, src = _arrays(dc, "test")
    assert images.shape == (10_000, 32, 32, 3) and src.num_examples == 10_000
    _, fashion_labels = fashion_mnist.read_split(*datasets._fashion_paths(dc, "test"))
    np.testing.assert_array_equal(labels, fashion_labels)
    assert 0.2 < images.mean() / 255 < 0.7
