"""Sources: Fashion-MNIST IDX files (real and generated, corrupt ones), tfds sets (mocked),
folders."""

import gzip
import os

import ml_collections
import numpy as np
import pytest
import tensorflow_datasets as tfds
from PIL import Image

from ssl_jax.data import datasets
from ssl_jax.data.sources import fashion_mnist
from tests.data.data_helpers import make_fashion_dir, mock_tfds, write_idx

REAL_FASHION = os.path.isfile(
    os.path.join(fashion_mnist.FASHION_MNIST_DIR, "t10k-images-idx3-ubyte.gz")
)


def _dc(**kw) -> ml_collections.ConfigDict:
    base = dict(name="fashion_mnist", data_dir="", manual_dir="", channels=3, cache=False)
    base.update(kw)
    return ml_collections.ConfigDict(base)


@pytest.fixture(autouse=True)
def _fresh_caches():
    datasets.clear_cache()
    yield
    datasets.clear_cache()


# --------------------------------------------------------------------------------------------------
# Fashion-MNIST


@pytest.mark.skipif(not REAL_FASHION, reason="dataset-fashion-mnist not installed")
def test_real_fashion_mnist_files():
    folder = fashion_mnist.FASHION_MNIST_DIR
    images = fashion_mnist.read_idx(os.path.join(folder, "t10k-images-idx3-ubyte.gz"), 2051)
    labels = fashion_mnist.read_idx(os.path.join(folder, "t10k-labels-idx1-ubyte.gz"), 2049)
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (10000,) and set(np.unique(labels)) == set(range(10))
    assert datasets.num_examples(_dc(), "train") == 60000
    assert datasets.num_examples(_dc(), "test") == 10000
    assert datasets.has_labels(_dc(), "test")
    first = next(datasets.load_source(_dc(), "test").as_numpy_iterator())
    assert first["image"].shape == (28, 28, 1) and first["image"].dtype == np.uint8
    np.testing.assert_array_equal(first["image"][..., 0], images[0])
    assert first["label"] == labels[0] and first["index"] == 0


def test_generated_idx_roundtrip_and_source(tmp_path):
    folder = make_fashion_dir(str(tmp_path / "fm"), num_train=12, num_test=5)
    dc = _dc(data_dir=folder)
    assert datasets.num_examples(dc, "train") == 12
    assert datasets.num_examples(dc, "test") == 5
    examples = list(datasets.load_source(dc, "train").as_numpy_iterator())
    assert [int(e["index"]) for e in examples] == list(range(12))
    assert [int(e["label"]) for e in examples] == [i % 10 for i in range(12)]
    assert all(
        e["image"].shape == (28, 28, 1) and e["image"][0, 0, 0] == i for i, e in enumerate(examples)
    )
    with pytest.raises(datasets.DataError, match="splits"):
        datasets.num_examples(dc, "validation")


def _write_pair(folder, images, labels, image_magic=None):
    os.makedirs(folder, exist_ok=True)
    write_idx(os.path.join(folder, "train-images-idx3-ubyte.gz"), images, magic=image_magic)
    write_idx(os.path.join(folder, "train-labels-idx1-ubyte.gz"), labels)
    return folder


def test_idx_wrong_magic(tmp_path):
    path = str(tmp_path / "x.gz")
    write_idx(path, np.zeros((3, 28, 28)), magic=2049 + 0x100)
    with pytest.raises(datasets.DataError, match="magic"):
        fashion_mnist.read_idx(path, 2051)
    write_idx(path, np.zeros((3,)))  # a valid labels file where images are expected
    with pytest.raises(datasets.DataError, match="magic number 2049, expected 2051"):
        fashion_mnist.read_idx(path, 2051)
    folder = _write_pair(str(tmp_path / "f"), np.zeros((3, 28, 28)), np.zeros(3), image_magic=1234)
    with pytest.raises(datasets.DataError, match="magic"):
        datasets.load_source(_dc(data_dir=folder), "train")


def test_idx_truncated_payload_and_gzip(tmp_path):
    folder = _write_pair(str(tmp_path / "f"), np.ones((4, 28, 28)), np.arange(4))
    images_path = os.path.join(folder, "train-images-idx3-ubyte.gz")
    # Payload shorter than the header says (valid gzip stream).
    raw = gzip.decompress(open(images_path, "rb").read())
    with gzip.open(images_path, "wb") as f:
        f.write(raw[:-100])
    with pytest.raises(datasets.DataError, match="truncated"):
        datasets.load_source(_dc(data_dir=folder), "train")
    # Gzip stream cut in the middle.
    with gzip.open(images_path, "wb") as f:
        f.write(raw)
    blob = open(images_path, "rb").read()
    open(images_path, "wb").write(blob[: len(blob) // 2])
    datasets.clear_cache()
    with pytest.raises(datasets.DataError, match="truncated|corrupt"):
        datasets.load_source(_dc(data_dir=folder), "train")
    # Not gzip at all.
    open(images_path, "wb").write(b"garbage" * 10)
    with pytest.raises(datasets.DataError):
        datasets.load_source(_dc(data_dir=folder), "train")


def test_idx_inconsistent_files(tmp_path):
    folder = _write_pair(str(tmp_path / "a"), np.ones((4, 28, 28)), np.arange(3))
    with pytest.raises(datasets.DataError, match="3 labels for 4 images"):
        datasets.load_source(_dc(data_dir=folder), "train")
    folder = _write_pair(str(tmp_path / "b"), np.ones((4, 27, 28)), np.arange(4))
    with pytest.raises(datasets.DataError, match="expected \\(28, 28\\)"):
        datasets.load_source(_dc(data_dir=folder), "train")
    folder = _write_pair(str(tmp_path / "c"), np.ones((4, 28, 28)), np.array([0, 1, 2, 11]))
    with pytest.raises(datasets.DataError, match="label 11"):
        datasets.load_source(_dc(data_dir=folder), "train")


def test_missing_fashion_folder_mentions_install(tmp_path):
    dc = _dc(data_dir=str(tmp_path / "nowhere"))
    for call in (datasets.num_examples, datasets.load_source, datasets.has_labels):
        with pytest.raises(datasets.DataError, match="apt-get install -y dataset-fashion-mnist"):
            call(dc, "train")


# --------------------------------------------------------------------------------------------------
# tfds (mocked)


@pytest.mark.parametrize("cache", [False, True])
@pytest.mark.parametrize(
    "name, split, shape, labelled",
    [
        ("cifar10", "train", (32, 32, 3), True),
        ("cifar100", "test", (32, 32, 3), True),
        ("stl10", "unlabelled", (96, 96, 3), False),
        ("stl10", "train", (96, 96, 3), True),
        ("imagenet2012", "validation", None, True),
    ],
)
def test_tfds_sources(tmp_path, name, split, shape, labelled, cache):
    dc = _dc(name=name, data_dir=str(tmp_path), cache=cache)
    with mock_tfds(5):
        assert datasets.has_labels(dc, split) == labelled
        assert datasets.num_examples(dc, split) == 5
        examples = list(datasets.load_source(dc, split).as_numpy_iterator())
        src = datasets.open_source(dc, split)
    assert (src.lookup is not None) == cache
    assert [int(e["index"]) for e in examples] == list(range(5))
    for e in examples:
        assert e["image"].dtype == np.uint8 and e["image"].ndim == 3
        if shape:
            assert e["image"].shape == shape
        assert (e["label"] >= 0) == labelled
        if not labelled:
            assert e["label"] == -1
    if name == "imagenet2012":  # mock images have random sizes
        assert len({e["image"].shape for e in examples}) > 1


@pytest.mark.parametrize("cache", [False, True])
def test_tfds_joined_splits(tmp_path, cache):
    """stl10 'train+unlabelled' (InfoMin Table 5's 105k): the parts one after the other, index =
    position, each part's labels; `read` of a range across the join; unlabelled as a whole."""
    dc = _dc(name="stl10", data_dir=str(tmp_path), cache=cache)
    with mock_tfds(5):
        assert datasets.num_examples(dc, "train+unlabelled") == 10
        assert datasets.num_examples(dc, "train+unlabeled") == 10  # the alias, in a join too
        assert not datasets.has_labels(dc, "train+unlabelled")
        assert datasets.has_labels(dc, "train+test")
        examples = list(datasets.load_source(dc, "train+unlabelled").as_numpy_iterator())
        train = list(datasets.load_source(dc, "train").as_numpy_iterator())
        unlabelled = list(datasets.load_source(dc, "unlabelled").as_numpy_iterator())
        src = datasets.open_source(dc, "train+unlabelled")
        middle = [int(e["index"]) for e in src.read(3, 8).as_numpy_iterator()]
        images, labels = datasets.load_arrays(dc, "train+unlabelled")
        with pytest.raises(datasets.DataError, match="twice"):
            datasets.num_examples(dc, "train+train")
        with pytest.raises(datasets.DataError, match="'validation'"):
            datasets.has_labels(dc, "train+validation")
    assert [int(e["index"]) for e in examples] == list(range(10)) and middle == [3, 4, 5, 6, 7]
    assert [int(e["label"]) for e in examples] == [int(e["label"]) for e in train] + [-1] * 5
    assert all(int(e["label"]) >= 0 for e in train)
    for got, want in zip(examples, train + unlabelled, strict=True):
        np.testing.assert_array_equal(got["image"], want["image"])
    assert images.shape == (10, 96, 96, 3) and labels.tolist()[5:] == [-1] * 5


def test_tfds_unknown_split_and_unprepared_sizes(tmp_path):
    dc = _dc(name="cifar10", data_dir=str(tmp_path))
    with pytest.raises(datasets.DataError, match="splits"):
        datasets.has_labels(dc, "unlabelled")
    # Not prepared (no mock): the published size, without downloading anything.
    assert datasets.num_examples(dc, "train") == 50_000
    assert datasets.num_examples(_dc(name="stl10", data_dir=str(tmp_path)), "unlabelled") == 100_000
    stl10 = _dc(name="stl10", data_dir=str(tmp_path))
    assert datasets.num_examples(stl10, "train+unlabelled") == 105_000


def test_imagenet_manual_dir_is_passed(tmp_path, monkeypatch):
    seen = {}

    def fake_prepare(self, *, download_config=None, **kwargs):
        seen["manual_dir"] = download_config.manual_dir
        raise AssertionError("ImageNet requires manual download of the data.")

    monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare", fake_prepare)
    dc = _dc(name="imagenet2012", data_dir=str(tmp_path), manual_dir=str(tmp_path / "manual"))
    with pytest.raises(datasets.DataError, match="manual_dir"):
        datasets.open_source(dc, "train")
    assert seen["manual_dir"] == str(tmp_path / "manual")


# --------------------------------------------------------------------------------------------------
# Image folders


def _save(path, size, mode="RGB", fmt="PNG", value=0):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    channels = {"RGB": 3, "L": 1, "RGBA": 4}[mode]
    array = np.full((size[1], size[0], channels), value, np.uint8).squeeze()
    Image.fromarray(array, mode).save(path, fmt)


def test_image_folder_with_classes(tmp_path):
    root = tmp_path / "root"
    _save(str(root / "train" / "dog" / "b.png"), (20, 30), value=1)
    _save(str(root / "train" / "dog" / "a.jpg"), (40, 10), fmt="JPEG", value=2)
    _save(str(root / "train" / "cat" / "z.png"), (16, 16), mode="L", value=3)
    _save(str(root / "train" / "cat" / "sub" / "y.png"), (8, 9), mode="RGBA", value=4)
    (root / "train" / "cat" / "notes.txt").write_text("not an image")
    _save(str(root / "val" / "cat" / "v.png"), (12, 12), value=5)
    dc = _dc(name="image_folder", data_dir=str(root))
    assert datasets.num_examples(dc, "train") == 4
    assert datasets.has_labels(dc, "train")
    examples = list(datasets.load_source(dc, "train").as_numpy_iterator())
    # Sorted classes (cat=0, dog=1), sorted paths within a class.
    assert [int(e["label"]) for e in examples] == [0, 0, 1, 1]
    assert [e["image"].shape for e in examples] == [
        (9, 8, 3),
        (16, 16, 3),
        (10, 40, 3),
        (30, 20, 3),
    ]
    assert [int(e["index"]) for e in examples] == [0, 1, 2, 3]
    assert examples[1]["image"].max() == 3 and examples[3]["image"].max() == 1
    val = list(datasets.load_source(dc, "val").as_numpy_iterator())
    assert len(val) == 1 and val[0]["label"] == 0
    with pytest.raises(datasets.DataError, match="no folder"):
        datasets.num_examples(dc, "test")
    gray = list(
        datasets.load_source(
            _dc(name="image_folder", data_dir=str(root), channels=1), "train"
        ).as_numpy_iterator()
    )
    assert all(e["image"].shape[-1] == 1 for e in gray)


@pytest.mark.parametrize("cache", [False, True])
def test_flat_image_folder(tmp_path, cache):
    for k, size in enumerate([(5, 7), (33, 21), (64, 64)]):
        _save(str(tmp_path / f"img{k}.png"), size, value=k)
    dc = _dc(name="image_folder", data_dir=str(tmp_path), cache=cache)
    assert not datasets.has_labels(dc, "train")
    assert datasets.num_examples(dc, "train") == 3
    examples = list(datasets.load_source(dc, "train").as_numpy_iterator())
    assert [int(e["label"]) for e in examples] == [-1, -1, -1]
    assert [e["image"].shape for e in examples] == [(7, 5, 3), (21, 33, 3), (64, 64, 3)]
    src = datasets.open_source(dc, "train")
    assert src.lookup is not None
    again = src.lookup(2)
    assert src.decode(again["image"]).shape == (64, 64, 3)


def test_image_folder_errors(tmp_path):
    with pytest.raises(datasets.DataError, match="does not exist"):
        datasets.num_examples(_dc(name="image_folder", data_dir=str(tmp_path / "x")), "train")
    _save(str(tmp_path / "a.png"), (4, 4))
    _save(str(tmp_path / "cls" / "b.png"), (4, 4))
    with pytest.raises(datasets.DataError, match="both image files and sub-folders"):
        datasets.num_examples(_dc(name="image_folder", data_dir=str(tmp_path)), "train")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(datasets.DataError, match="no .* files"):
        datasets.num_examples(_dc(name="image_folder", data_dir=str(empty)), "train")
