"""The data sets: their names, sizes, shapes and labels, and each split as a `Source` or as arrays in
host memory, whichever back-end holds it.

Every split is exposed as a `Source` (`sources/source.py`): its length, whether it has labels, `read(start,
end)` (a tf.data stream of the examples at positions `[start, end)` in a fixed order, images possibly
still encoded) with `decode`, and `lookup(index)` when the split allows random access (in memory, or
one file per image). The pipeline builds on `open_source`; `load_source` is the plain decoded stream
of the design contract.

Layouts:
- `fashion_mnist`: the four IDX `.gz` files of Zalando's release in `data_dir` (default
  `/usr/share/datasets/fashion-mnist`, Debian package `dataset-fashion-mnist`). Splits 'train'
  (60000) and 'test' (10000). Headers, dimensions, lengths and labels are checked before use, so a
  truncated or corrupt file raises `DataError` and is never half-read. Always held in host memory.
- `color_fashion_mnist`: the same IDX files and splits, each item tinted and composited on a crop
  of a photograph shipped with scikit-image (`sources/color_fashion_mnist.py`: the generative story, the
  options `config.data.color_fashion_mnist`), RGB at 32 or 64 px; generated on first use and
  cached as `.npz`. Held in host memory. With `views='item'` training reads `train_source`: the
  items, each view composited anew.
- `cifar10`, `cifar100`, `stl10`, `imagenet2012`: tfds builders (`sources/tfds_source.py`: where they are
  prepared from, split names, `cache`).
- `image_folder`: the user's images under `data_dir` (`sources/image_folder.py`: the folder of a split,
  labels, formats, the check of unreadable files and `data.bad_images`).

TensorFlow (and tfds) are imported on first use of a tf.data stream: `load_arrays`, `num_examples`
and `has_labels` of the numpy-held sets (`NUMPY_NAMES`) run without them.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from ssl_jax.data.sources import color_fashion_mnist, fashion_mnist, image_folder, tfds_source
from ssl_jax.data.sources.fashion_mnist import DataError
from ssl_jax.data.sources.source import Source, array_source, cache_key, config_get

if TYPE_CHECKING:
    import tensorflow as tf

TFDS_NAMES = ("cifar10", "cifar100", "stl10", "imagenet2012")
NAMES = ("fashion_mnist", "color_fashion_mnist", *TFDS_NAMES, "image_folder")
FASHION_NAMES = ("fashion_mnist", "color_fashion_mnist")  # read Fashion-MNIST's IDX files
NUMPY_NAMES = FASHION_NAMES  # held in host memory as numpy arrays: read without TensorFlow

# Class names by data set: label i is the i-th name.
CLASS_NAMES = {
    "fashion_mnist": fashion_mnist.CLASSES,
    "color_fashion_mnist": fashion_mnist.CLASSES,
    "cifar10": (
        "airplane",
        "automobile",
        "bird",
        "cat",
        "deer",
        "dog",
        "frog",
        "horse",
        "ship",
        "truck",
    ),
    "stl10": ("airplane", "bird", "car", "cat", "deer", "dog", "horse", "monkey", "ship", "truck"),
}


def _name(data_config: Any) -> str:
    name = data_config.name
    if name not in NAMES:
        raise DataError(f"config.data.name={name!r} is not one of {NAMES}.")
    return name


# --------------------------------------------------------------------------------------------------
# Fashion-MNIST (IDX)


def _fashion_paths(data_config: Any, split: str) -> tuple[str, str]:
    folder = config_get(data_config, "data_dir", "") or fashion_mnist.FASHION_MNIST_DIR
    return fashion_mnist.split_paths(folder, split, data_config.name)


def _fashion_num_examples(data_config: Any, split: str) -> int:
    images_path, labels_path = _fashion_paths(data_config, split)
    try:
        magic, dims = fashion_mnist.read_idx_header(images_path)
        lmagic, ldims = fashion_mnist.read_idx_header(labels_path)
    except OSError as e:
        raise DataError(f"Fashion-MNIST {split}: cannot read the IDX headers ({e}).") from e
    if (
        magic != fashion_mnist.IDX_IMAGES_MAGIC
        or lmagic != fashion_mnist.IDX_LABELS_MAGIC
        or dims[0] != ldims[0]
    ):
        raise DataError(f"Fashion-MNIST {split}: inconsistent headers {dims} / {ldims}.")
    return int(dims[0])


def _fashion_source(data_config: Any, split: str) -> Source:
    images, labels = fashion_mnist.read_split(*_fashion_paths(data_config, split))
    return array_source("fashion_mnist", split, images, labels, True)


def _color_fashion_source(data_config: Any, split: str) -> Source:
    paths = _fashion_paths(data_config, split)
    cfg = config_get(data_config, "color_fashion_mnist", None)
    images, labels = _color_fashion_arrays(
        *paths, split, color_fashion_mnist.check_config(cfg), color_fashion_mnist.cache_dir(cfg)
    )
    return array_source("color_fashion_mnist", split, images, labels, True)


def _item_views_source(data_config: Any, split: str) -> Source:
    """color_fashion_mnist's `views='item'`: the split's items (uint8 `[28, 28, 1]`) with a
    `compose` that composites one view from the item and the view's seed (four uniforms: photo,
    top, left, hue; `color_fashion_mnist.composite`, the generator's own numpy, in the tf.data
    map)."""
    import tensorflow as tf

    cfg = config_get(data_config, "color_fashion_mnist", None)
    options = color_fashion_mnist.check_config(cfg)
    items, labels = fashion_mnist.read_split(*_fashion_paths(data_config, split))
    shape = (options.size, options.size, 3)

    def one_view(item: np.ndarray, u: np.ndarray) -> np.ndarray:
        return color_fashion_mnist.composite(item, u, options)["image"][0]

    def compose(item: tf.Tensor, seed: tf.Tensor) -> tf.Tensor:
        u = tf.random.stateless_uniform([1, 4], seed, dtype=tf.float64)
        image = tf.numpy_function(one_view, [item, u], tf.uint8, stateful=False)
        return tf.ensure_shape(image, shape)

    src = array_source("color_fashion_mnist", split, items, labels, True)
    return dataclasses.replace(src, channels=3, compose=compose)


@functools.lru_cache(maxsize=4)
def _color_fashion_arrays(
    images_path: str, labels_path: str, split: str, options: Any, folder: str
) -> tuple[np.ndarray, np.ndarray]:
    items, labels = fashion_mnist.read_split(images_path, labels_path)
    out = color_fashion_mnist.load(items, labels, split, options, folder, images_path)
    return out["image"], out["label"]


# --------------------------------------------------------------------------------------------------
# Public API


def open_source(data_config: Any, split: str) -> Source:
    """The `Source` of `split`, preparing tfds sets on first use."""
    name = _name(data_config)
    if name == "fashion_mnist":
        return _fashion_source(data_config, split)
    if name == "color_fashion_mnist":
        return _color_fashion_source(data_config, split)
    if name == "image_folder":
        return image_folder.open_source(data_config, split)
    return tfds_source.open_source(data_config, split)


def train_source(data_config: Any) -> Source:
    """The `Source` training views are made from: `open_source` of `data_config.train_split`, or
    with color_fashion_mnist's `views='item'` its items, each view composited anew
    (`Source.compose`); evaluation reads `open_source` / `load_arrays`, the generated images.
    `views` against the other data keys: `color_fashion_mnist.check_views` (`ConfigError`)."""
    color_fashion_mnist.check_views(data_config)
    if color_fashion_mnist.item_views(data_config):
        return _item_views_source(data_config, data_config.train_split)
    return open_source(data_config, data_config.train_split)


def prepare(data_config: Any) -> None:
    """Makes a config's data ready to read (tfds sets: downloaded and prepared, or one clear
    `DataError`); the other sets are local files, checked when opened. Called before a run
    writes anything to its workdir."""
    if _name(data_config) in TFDS_NAMES:
        tfds_source.prepare(data_config)


def num_examples(data_config: Any, split: str) -> int:
    """Examples in `split` without decoding pixels: IDX header, tfds info (or the published size
    while a tfds set is not prepared), or the decodable file count of an image folder."""
    name = _name(data_config)
    if name in FASHION_NAMES:
        return _fashion_num_examples(data_config, split)
    if name == "image_folder":
        return len(image_folder.listing(data_config, split)[0])
    return tfds_source.num_examples(data_config, split)


def image_shape(data_config: Any, split: str) -> tuple[int, int, int] | None:
    """`(H, W, C)` of every stored image of `split`, known without decoding one (the IDX header,
    `color_fashion_mnist`'s size, `tfds_source.KNOWN_IMAGE_SHAPES`); None where images may differ
    or are only known by decoding them (ImageNet, image folders)."""
    name = _name(data_config)
    if name == "fashion_mnist":
        dims = fashion_mnist.read_idx_header(_fashion_paths(data_config, split)[0])[1]
        return (int(dims[1]), int(dims[2]), 1)
    if name == "color_fashion_mnist":
        cfg = config_get(data_config, "color_fashion_mnist", None)
        size = color_fashion_mnist.check_config(cfg).size
        return (size, size, 3)
    return tfds_source.KNOWN_IMAGE_SHAPES.get(name)


def has_labels(data_config: Any, split: str) -> bool:
    """False for stl10 'unlabelled' (and a '+' join with it), imagenet2012 'test' and flat image
    folders."""
    name = _name(data_config)
    if name in FASHION_NAMES:
        _fashion_paths(data_config, split)
        return True
    if name == "image_folder":
        return image_folder.listing(data_config, split)[2]
    return tfds_source.has_labels(name, split)


def load_source(data_config: Any, split: str) -> tf.data.Dataset:
    """`{'image': uint8 [H, W, C], 'label': int32, 'index': int32}` in a fixed order, index =
    position; label -1 where the split has no labels."""
    import tensorflow as tf

    src = open_source(data_config, split)
    return src.read(0, src.num_examples).map(
        lambda ex: {**ex, "image": src.decode(ex["image"])}, num_parallel_calls=tf.data.AUTOTUNE
    )


_ARRAYS: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}


def load_arrays(data_config: Any, split: str) -> tuple[np.ndarray, np.ndarray]:
    """The whole split in host memory: uint8 `[N, H, W, C]` (the source's own channels) and int32
    labels `[N]` (-1 where unlabelled), row i = index i (the order of `open_source(...).read`);
    memoised per process (`clear_cache`). `NUMPY_NAMES` (Fashion-MNIST, color_fashion_mnist): numpy
    only, no TensorFlow. tfds sets: decoded once through tf.data (shared with `cache`). Image
    folders: every file decoded; all must have one size, else `DataError` naming the first that
    differs."""
    name = _name(data_config)
    if name == "fashion_mnist":
        return fashion_mnist.read_split(*_fashion_paths(data_config, split))
    if name == "color_fashion_mnist":
        paths = _fashion_paths(data_config, split)
        cfg = config_get(data_config, "color_fashion_mnist", None)
        return _color_fashion_arrays(
            *paths, split, color_fashion_mnist.check_config(cfg), color_fashion_mnist.cache_dir(cfg)
        )
    if name != "image_folder":
        return tfds_source.arrays(data_config, split)
    key = (*cache_key(data_config, split), int(config_get(data_config, "channels", 3)))
    if key not in _ARRAYS:
        paths = image_folder.listing(data_config, split)[0]
        images, labels = [], []
        for k, ex in enumerate(load_source(data_config, split).as_numpy_iterator()):
            if images and ex["image"].shape != images[0].shape:
                raise DataError(
                    f"{paths[k]} is {ex['image'].shape[:2]} (height, width), not "
                    f"{images[0].shape[:2]} like {paths[0]}: the device pipeline needs one image "
                    "size (config.data.pipeline='tfdata' takes any)."
                )
            images.append(ex["image"])
            labels.append(ex["label"])
        _ARRAYS[key] = (np.stack(images), np.asarray(labels, np.int32))
    return _ARRAYS[key]


def first_images(data_config: Any, split: str, count: int) -> list[np.ndarray]:
    """The first `count` images of a split, uint8 `[H, W, C]` each (pictures): `NUMPY_NAMES` from
    `load_arrays` (no TensorFlow), the others decoded through `load_source`."""
    if _name(data_config) in NUMPY_NAMES:
        return list(load_arrays(data_config, split)[0][:count])
    stream = load_source(data_config, split).take(count).as_numpy_iterator()
    return [ex["image"] for ex in stream]


def clear_cache() -> None:
    """Forget materialised splits, Fashion-MNIST arrays and folder listings (tests, notebooks)."""
    tfds_source.clear_cache()
    _ARRAYS.clear()
    fashion_mnist.read_split.cache_clear()
    _color_fashion_arrays.cache_clear()
    image_folder.clear_cache()
