"""color_fashion_mnist: generated offline from small IDX folders (and the real test split when
installed): shapes, labels, determinism, prefix stability, tint modes, cache reuse and regeneration,
option checks before any compile; `views='item'`: each training view a composite of the item on its
own photo crop and tint (checked against an independent formula), 'shared' today's views, the
evaluation images unchanged, its bad combinations refused."""

import colorsys
import itertools
import os

import ml_collections
import numpy as np
import pytest
from PIL import Image

from configs import common
from ssl_jax import configs, validation
from ssl_jax.config_checks import ConfigError
from ssl_jax.data import datasets, device_pipeline, pipeline, recipes
from ssl_jax.data.sources import color_fashion_mnist as cfm
from ssl_jax.data.sources import fashion_mnist
from ssl_jax.evaluate import linear_probe
from tests.data.data_helpers import make_config, make_fashion_dir, write_idx
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


# --------------------------------------------------------------------------------------------------
# views='item': each training view composited anew from the item

ITEM_OPTIONS = dict(backgrounds=("astronaut", "chelsea", "coffee"), background_crop=0.5)
IDENTITY = ({"op": "center_crop", "size": 32},)  # the 32-px composite as it is


@pytest.fixture(scope="module")
def item_dir(tmp_path_factory):
    """Items with a transparent 6-px border (every view shows its photo crop there), a noisy
    interior and an opaque centre (pure tint)."""
    folder = str(tmp_path_factory.mktemp("items"))
    rng = np.random.default_rng(1)
    for prefix, n in (("train", 32), ("t10k", 16)):
        items = np.zeros((n, 28, 28), np.uint8)
        items[:, 6:22, 6:22] = rng.integers(0, 256, (n, 16, 16))
        items[:, 10:18, 10:18] = 255
        write_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"), items)
        write_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"), np.arange(n) % 10)
    return folder


def _item_config(data_dir, cache_dir, views="item", recipe=IDENTITY, **options):
    c = make_config(
        data_dir,
        global_batch_size=16,
        name="color_fashion_mnist",
        image_size=32,
        views=("a", "a"),
        recipes={"a": recipe, "weak": recipes.weak(32)},
    )
    c.data.color_fashion_mnist = ml_collections.ConfigDict(
        dict(cache_dir=cache_dir, views=views, **{**ITEM_OPTIONS, **options})
    )
    return c


def _alpha(item: np.ndarray) -> np.ndarray:
    """The item upscaled to 32 px, bilinear (PIL, float): independent of the generator's matrix."""
    x = Image.fromarray(item.reshape(28, 28).astype(np.float32) / 255, "F")
    return np.asarray(x.resize((32, 32), Image.Resampling.BILINEAR), np.float64)


def _expected(alpha, hue, background) -> np.ndarray:
    """pixel = alpha · tint + (1 − alpha) · background, tint = HSV(hue, 1, 1), rounded to uint8."""
    tint = np.array(colorsys.hsv_to_rgb(hue, 1.0, 1.0))
    out = alpha[..., None] * tint + (1 - alpha[..., None]) * background
    return np.floor(np.clip(out, 0, 1) * 255 + 0.5).astype(np.uint8)


def _explain(view: np.ndarray, alpha: np.ndarray, bank: np.ndarray) -> tuple:
    """(photo, top, left, hue) of a composite: the photo crop that matches its transparent pixels
    (searched over every crop of every photo), the hue of the tint its opaque part leaves."""
    clear = alpha == 0
    windows = np.lib.stride_tricks.sliding_window_view(bank, (32, 32), axis=(1, 2))
    crops = windows.transpose(0, 1, 2, 4, 5, 3)[:, :, :, clear]  # [P, T, L, pixels, 3]
    err = np.abs(np.round(crops * 255) - view[clear]).max(axis=(-2, -1))
    photo, top, left = np.unravel_index(np.argmin(err), err.shape)
    background = bank[photo, top : top + 32, left : left + 32].astype(np.float64)
    solid = alpha > 0.5
    tint = (view[solid] / 255 - (1 - alpha[solid, None]) * background[solid]) / alpha[solid, None]
    tint = tint.mean(0)
    assert tint.max() > 0.98 and tint.min() < 0.02, tint  # a fully saturated, bright tint
    return int(photo), int(top), int(left), colorsys.rgb_to_hsv(*tint)[0], background


@pytest.mark.parametrize("tint", ["independent", "background", "fixed"])
def test_item_views_share_the_item_and_nothing_else(item_dir, tmp_path, tint):
    c = _item_config(item_dir, str(tmp_path), tint=tint, hue=0.3)
    batches = list(itertools.islice(pipeline.train_iterator(c), 2))
    resumed = next(pipeline.train_iterator(c, start_step=1))  # the draws follow (seed, epoch, i, v)
    for a, b in zip(batches[1]["views"], resumed["views"]):
        np.testing.assert_array_equal(a, b)
    items, _ = fashion_mnist.read_split(*datasets._fashion_paths(c.data, "train"))
    generated, _ = datasets.load_arrays(c.data, "train")
    bank = cfm.photo_bank(ITEM_OPTIONS["backgrounds"], 64)
    batch, draws = batches[0], []
    for row, index in enumerate(batch["index"]):
        alpha = _alpha(items[index])
        pair = []
        for view in batch["views"]:
            photo, top, left, hue, background = _explain(view[row], alpha, bank)
            # a valid composite of this item on the drawn crop with the drawn hue
            diff = np.abs(view[row].astype(int) - _expected(alpha, hue, background)).max()
            assert diff <= 1, (index, diff)
            assert not np.array_equal(view[row], generated[index])
            if tint == "fixed":
                assert abs(hue - 0.3) < 2e-3
            if tint == "background":
                complement = (cfm.mean_hue(background.mean((0, 1))) + 0.5) % 1.0
                assert min(abs(hue - complement), 1 - abs(hue - complement)) < 2e-3
            pair.append((photo, top, left, hue))
        draws.append(pair)
    crops_differ = np.mean([p[0][:3] != p[1][:3] for p in draws])
    hues_differ = np.mean(
        [min(abs(p[0][3] - p[1][3]), 1 - abs(p[0][3] - p[1][3])) > 0.02 for p in draws]
    )
    assert crops_differ >= 0.9
    if tint == "independent":  # ('background': the hue follows the crop, checked above)
        assert hues_differ >= 0.75
    assert len({p[0][0] for p in draws}) == 3  # every photo drawn


def test_composite_matches_an_independent_formula(item_dir):
    items, _ = fashion_mnist.read_split(
        *datasets._fashion_paths(_item_config(item_dir, "").data, "train")
    )
    options = cfm.check_config(ITEM_OPTIONS)
    u = np.random.default_rng(5).random((6, 4))
    out = cfm.composite(items[:6], u, options)
    bank = cfm.photo_bank(options.backgrounds, 64)
    for i in range(6):
        p, t, x = out["photo"][i], out["top"][i], out["left"][i]
        assert (p, t, x) == (int(u[i, 0] * 3), int(u[i, 1] * 33), int(u[i, 2] * 33))
        assert out["hue"][i] == np.float32(u[i, 3])
        expected = _expected(_alpha(items[i]), float(u[i, 3]), bank[p, t : t + 32, x : x + 32])
        assert np.abs(out["image"][i].astype(int) - expected).max() <= 1


def test_shared_views_are_the_generated_images(item_dir, tmp_path):
    shared = _item_config(item_dir, str(tmp_path), views="shared")
    assert datasets.train_source(shared.data).compose is None
    batch = next(pipeline.train_iterator(shared))
    generated, _ = datasets.load_arrays(shared.data, "train")
    for view in batch["views"]:  # the identity recipe: every view is the generated image
        np.testing.assert_array_equal(view, generated[batch["index"]])
    # the default (a config written before the option) and 'shared' give the same batches
    shared.data.views = ("weak", "weak")
    before = _item_config(item_dir, str(tmp_path), views="shared")
    before.data.views = ("weak", "weak")
    del before.data.color_fashion_mnist["views"]
    for a, b in zip(
        itertools.islice(pipeline.train_iterator(shared), 2),
        itertools.islice(pipeline.train_iterator(before), 2),
    ):
        for x, y in zip(a["views"], b["views"]):
            np.testing.assert_array_equal(x, y)
    assert len(os.listdir(str(tmp_path))) == 1  # one cache file: 'views' is not in its name


def test_item_views_leave_the_evaluation_images(item_dir, tmp_path):
    item = _item_config(item_dir, str(tmp_path))
    shared = _item_config(item_dir, str(tmp_path), views="shared")
    for split in ("train", "test"):
        a = list(pipeline.eval_iterator(item, split, batch_size=8))
        b = list(pipeline.eval_iterator(shared, split, batch_size=8))
        generated, _ = datasets.load_arrays(shared.data, split)
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x["image"], y["image"])
        np.testing.assert_array_equal(np.concatenate([x["image"] for x in a]), generated)
    probe = ml_collections.ConfigDict(
        dict(crop_scale=(0.2, 1.0), flip=True, num_train=-1, batch_size=8)
    )
    pc = linear_probe._probe_data_config(item, probe)  # the probe's SGD on augmented images
    assert pc.data.color_fashion_mnist.views == "shared"
    assert datasets.train_source(pc.data).compose is None


def test_item_views_bad_input_fails_before_compile(item_dir, tmp_path):
    c = tiny_config("mocov2")
    common.color_fashion_mnist_data(c, size=32)
    c.data.data_dir = item_dir
    c.data.color_fashion_mnist.cache_dir = str(tmp_path)
    c.data.color_fashion_mnist.views = "item"
    validation.validate(c, num_devices=8)
    c.data.pipeline = "auto"
    assert device_pipeline.resolve(c) == "tfdata"  # item views are composited on the host
    cases = [
        ("data.color_fashion_mnist.views", "both", "views='both'; allowed: \\('shared', 'item'\\)"),
        ("data.pipeline", "device", "pipeline='device' trains on the generated images"),
        ("data.device_crops", 32, "device_crops=32 cuts every view from one image"),
    ]
    for key, value, match in cases:
        bad = ml_collections.ConfigDict(c.to_dict())
        configs.apply_override(bad, f"{key}={value!r}")
        with pytest.raises(ConfigError, match=match):
            validation.validate(bad, num_devices=8)
    grey = tiny_config("mocov2")  # Fashion-MNIST
    grey.data.color_fashion_mnist.views = "item"
    with pytest.raises(ConfigError, match="config.data.name='fashion_mnist': allowed 'shared'"):
        validation.validate(grey, num_devices=8)
    device = ml_collections.ConfigDict(c.to_dict())
    device.data.pipeline = "device"
    with pytest.raises(ConfigError, match="pipeline='device'"):
        device_pipeline.resolve(device)
