"""`datasets.load_arrays` (whole splits as numpy) and the numpy paths built on it: eval batches equal
to tf.data's, `adapt_channels` bit for bit, `first_images`, `device_train_iterator`."""

import os

import ml_collections
import numpy as np
import pytest
import tensorflow as tf
from PIL import Image

from ssl_jax.data import datasets, device_pipeline, pipeline
from ssl_jax.data.sources import fashion_mnist
from tests.data.data_helpers import make_config, make_fashion_dir, mock_tfds

REAL_FASHION = os.path.isfile(
    os.path.join(fashion_mnist.FASHION_MNIST_DIR, "t10k-images-idx3-ubyte.gz")
)
NUM_TRAIN, NUM_TEST = 24, 20


@pytest.fixture(autouse=True)
def _fresh_caches():
    datasets.clear_cache()
    yield
    datasets.clear_cache()


@pytest.fixture(scope="module")
def fashion_dir(tmp_path_factory):
    return make_fashion_dir(str(tmp_path_factory.mktemp("fashion")), NUM_TRAIN, NUM_TEST)


def _dc(**kw) -> ml_collections.ConfigDict:
    base = dict(name="fashion_mnist", data_dir="", manual_dir="", channels=3, cache=False)
    base.update(kw)
    return ml_collections.ConfigDict(base)


def _color_config(fashion_dir, cache_dir, **data):
    """color_fashion_mnist (32 px) generated from the small IDX folder into `cache_dir`."""
    pytest.importorskip("skimage")
    options = dict(size=32, seed=0, tint="independent", hue=0.0, backgrounds=())
    options.update(background_crop=0.25, cache_dir=str(cache_dir))
    data = {"image_size": 32, **data}
    return make_config(fashion_dir, name="color_fashion_mnist", color_fashion_mnist=options, **data)


def _source_rows(data_config, split):
    return {
        int(e["index"]): e for e in datasets.load_source(data_config, split).as_numpy_iterator()
    }


# --------------------------------------------------------------------------------------------------
# load_arrays


@pytest.mark.skipif(not REAL_FASHION, reason="dataset-fashion-mnist not installed")
def test_real_fashion_mnist_arrays_match_the_source():
    images, labels = datasets.load_arrays(_dc(), "test")
    assert images.shape == (10_000, 28, 28, 1) and images.dtype == np.uint8
    assert labels.shape == (10_000,) and labels.dtype == np.int32
    assert datasets.load_arrays(_dc(), "test")[0] is images  # memoised
    source = datasets.load_source(_dc(), "test")
    for i in (0, 1, 4321, 9999):
        ex = next(source.skip(i).take(1).as_numpy_iterator())
        np.testing.assert_array_equal(images[i], ex["image"])
        assert labels[i] == ex["label"] and ex["index"] == i
    datasets.clear_cache()
    assert datasets.load_arrays(_dc(), "test")[0] is not images


def test_color_fashion_mnist_arrays_match_the_source(fashion_dir, tmp_path):
    data = _color_config(fashion_dir, tmp_path).data
    images, labels = datasets.load_arrays(data, "train")
    assert images.shape == (NUM_TRAIN, 32, 32, 3) and images.dtype == np.uint8
    rows = _source_rows(data, "train")
    for i in range(NUM_TRAIN):
        np.testing.assert_array_equal(images[i], rows[i]["image"])
        assert labels[i] == rows[i]["label"]


def _save_png(path, hw, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.fromarray(np.full((*hw, 3), value, np.uint8)).save(path)


def test_image_folder_arrays_and_the_size_error(tmp_path):
    root = tmp_path / "classes"
    for k, (cls, name) in enumerate([("dog", "b.png"), ("cat", "z.png"), ("dog", "a.png")]):
        _save_png(str(root / cls / name), (6, 5), 10 * k)
    images, labels = datasets.load_arrays(_dc(name="image_folder", data_dir=str(root)), "train")
    # sorted classes (cat = 0, dog = 1), sorted paths within a class: z, a, b
    assert images.shape == (3, 6, 5, 3) and images.dtype == np.uint8
    assert [int(images[i].max()) for i in range(3)] == [10, 20, 0]
    np.testing.assert_array_equal(labels, [0, 1, 1])
    grey, _ = datasets.load_arrays(
        _dc(name="image_folder", data_dir=str(root), channels=1), "train"
    )
    assert grey.shape == (3, 6, 5, 1)

    flat = tmp_path / "flat"
    _save_png(str(flat / "0.png"), (6, 5), 0)
    _save_png(str(flat / "1.png"), (6, 5), 1)
    _save_png(str(flat / "2.png"), (7, 5), 2)
    dc = _dc(name="image_folder", data_dir=str(flat))
    with pytest.raises(datasets.DataError, match=r"2\.png is \(7, 5\).*not \(6, 5\) like .*0\.png"):
        datasets.load_arrays(dc, "train")


@pytest.mark.parametrize(
    "name, split, labelled", [("cifar10", "test", True), ("stl10", "unlabelled", False)]
)
def test_tfds_arrays(tmp_path, name, split, labelled):
    dc = _dc(name=name, data_dir=str(tmp_path))
    with mock_tfds(5):
        images, labels = datasets.load_arrays(dc, split)
        rows = _source_rows(dc, split)
    assert images.dtype == np.uint8 and images.shape[0] == 5 and labels.dtype == np.int32
    for i in range(5):
        np.testing.assert_array_equal(images[i], rows[i]["image"])
        assert labels[i] == rows[i]["label"]
    assert (labels >= 0).all() if labelled else (labels == -1).all()
    with mock_tfds(5):
        with pytest.raises(datasets.DataError, match="no fixed size"):
            datasets.load_arrays(_dc(name="imagenet2012", data_dir=str(tmp_path)), "validation")


def test_first_images(fashion_dir, tmp_path):
    dc = _dc(data_dir=fashion_dir)
    firsts = datasets.first_images(dc, "test", 3)
    rows = _source_rows(dc, "test")
    assert len(firsts) == 3
    for i, image in enumerate(firsts):
        np.testing.assert_array_equal(image, rows[i]["image"])
    _save_png(str(tmp_path / "flat" / "0.png"), (4, 9), 7)
    _save_png(str(tmp_path / "flat" / "1.png"), (5, 3), 8)
    sizes = datasets.first_images(
        _dc(name="image_folder", data_dir=str(tmp_path / "flat")), "train", 2
    )
    assert [i.shape for i in sizes] == [(4, 9, 3), (5, 3, 3)]


# --------------------------------------------------------------------------------------------------
# adapt_channels and eval batches in numpy


def test_numpy_adapt_channels_is_tf_bit_for_bit():
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    rgb[0, :8] = [[0, 0, 0], [255, 255, 255], [255, 0, 0], [0, 255, 0], [0, 0, 255], [1, 2, 3]] + [
        [128, 128, 128]
    ] * 2
    grey = rng.integers(0, 256, (64, 64, 1), dtype=np.uint8)
    for image, channels in ((rgb, 1), (grey, 3), (rgb, 3), (grey, 1)):
        want = pipeline.adapt_channels(tf.constant(image), channels).numpy()
        got = pipeline.adapt_channels(image, channels)
        assert isinstance(got, np.ndarray) and got.dtype == np.uint8
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        pipeline.adapt_channels(rgb[None], 1)[0], pipeline.adapt_channels(rgb, 1)
    )


def _tfdata_batches(config, split, batch_size, process_index=0, process_count=1):
    data = config.data
    return list(
        pipeline._tfdata_eval_batches(
            config,
            split,
            batch_size,
            process_index,
            process_count,
            int(data.image_size),
            float(data.eval_crop_fraction),
            int(data.channels),
        )
    )


def _numpy_batches(config, split, batch_size, monkeypatch, process_index=0, process_count=1):
    def no_tf(*args, **kwargs):
        raise AssertionError("the tf.data path was taken")

    with monkeypatch.context() as m:
        m.setattr(pipeline, "_tfdata_eval_batches", no_tf)
        return list(
            pipeline.eval_iterator(
                config,
                split,
                batch_size=batch_size,
                process_index=process_index,
                process_count=process_count,
            )
        )


def _assert_same_batches(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert list(g) == list(w)
        for key in w:
            assert g[key].dtype == w[key].dtype and g[key].shape == w[key].shape, key
            np.testing.assert_array_equal(g[key], w[key], err_msg=key)


@pytest.mark.parametrize(
    "channels, image_size, crop_fraction",
    [(1, 28, 1.0), (3, 28, 1.0), (1, 24, 24 / 28)],  # native; grey → RGB; centre crop, no resize
)
def test_fashion_eval_batches_equal_tfdata(
    fashion_dir, monkeypatch, channels, image_size, crop_fraction
):
    config = make_config(
        fashion_dir, channels=channels, image_size=image_size, eval_crop_fraction=crop_fraction
    )
    for p, count in ((0, 1), (1, 3)):
        got = _numpy_batches(config, "test", 4, monkeypatch, p, count)
        _assert_same_batches(got, _tfdata_batches(config, "test", 4, p, count))
    assert [int(b["mask"].sum()) for b in got] == [4, 3]  # process 1 of 3: rows [6, 13)
    assert got[-1]["index"][3] == -1 and (got[-1]["image"][3] == 0).all()


@pytest.mark.parametrize("channels", [3, 1])  # RGB; RGB → luma
def test_color_fashion_eval_batches_equal_tfdata(fashion_dir, tmp_path, monkeypatch, channels):
    config = _color_config(fashion_dir, tmp_path, channels=channels)
    got = _numpy_batches(config, "test", 16, monkeypatch)
    _assert_same_batches(got, _tfdata_batches(config, "test", 16))
    assert got[0]["image"].shape == (16, 32, 32, channels)


def test_eval_batches_that_need_a_resize_stay_on_tfdata(fashion_dir, monkeypatch):
    config = make_config(fashion_dir, image_size=16, channels=1)
    taken = []
    original = pipeline._tfdata_eval_batches
    monkeypatch.setattr(
        pipeline, "_tfdata_eval_batches", lambda *a: taken.append(1) or original(*a)
    )
    batch = next(iter(pipeline.eval_iterator(config, "test", batch_size=4)))
    assert taken and batch["image"].shape == (4, 16, 16, 1)


# --------------------------------------------------------------------------------------------------
# device_train_iterator


def test_device_train_iterator_order_views_and_resume(fashion_dir):
    crop = {"op": "center_crop", "size": 20}
    config = make_config(
        fashion_dir,
        global_batch_size=8,
        channels=3,
        views=("crop", "flip"),
        recipes={"crop": (crop,), "flip": (crop, {"op": "horizontal_flip", "p": 0.5})},
    )
    images, labels = datasets.load_arrays(config.data, "train")
    order = device_pipeline.index_batches(config, labels)
    batches = [next(it) for it in [pipeline.device_train_iterator(config)] for _ in range(4)]
    for batch in batches:
        want = next(order)
        np.testing.assert_array_equal(batch["index"], want["index"])
        np.testing.assert_array_equal(batch["label"], want["label"])
        crop_view, flip_view = batch["views"]
        assert crop_view.dtype == np.uint8 and crop_view.shape == (8, 20, 20, 3)
        expected = np.repeat(images[batch["index"], 4:24, 4:24], 3, axis=-1)
        np.testing.assert_array_equal(crop_view, expected)
        mirrored = (flip_view == expected[:, :, ::-1]).all(axis=(1, 2, 3))
        assert (mirrored | (flip_view == expected).all(axis=(1, 2, 3))).all()
    resumed = next(pipeline.device_train_iterator(config, start_step=3))
    for a, b in zip(resumed["views"], batches[3]["views"]):
        np.testing.assert_array_equal(a, b)
