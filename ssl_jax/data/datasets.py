"""Image sources: Fashion-MNIST (IDX files), tfds sets and user image folders.

Every split is exposed as a `Source`: its length, whether it has labels, `read(start, end)` (a
tf.data stream of the examples at positions `[start, end)` in a fixed order, images possibly still
encoded) with `decode`, and `lookup(index)` when the split allows random access (in memory, or one
file per image). The pipeline builds on `open_source`; `load_source` is the plain decoded stream of
the design contract.

Layouts:
- `fashion_mnist`: the four IDX `.gz` files of Zalando's release in `data_dir` (default
  `/usr/share/datasets/fashion-mnist`, Debian package `dataset-fashion-mnist`). Splits 'train'
  (60000) and 'test' (10000). Headers, dimensions, lengths and labels are checked before use, so a
  truncated or corrupt file raises `DataError` and is never half-read. Always held in host memory.
- `color_fashion_mnist`: the same IDX files and splits, each item tinted and composited on a crop
  of a photograph shipped with scikit-image (`color_fashion_mnist.py`: the generative story, the
  options `config.data.color_fashion_mnist`), RGB at 32 or 64 px; generated on first use and
  cached as `.npz`. Held in host memory.
- `cifar10`, `cifar100`, `stl10`, `imagenet2012`: tfds builders under `data_dir` (tfds's default
  when empty), downloaded and prepared on first use (imagenet2012 from the archives in
  `manual_dir`). tfds split names: stl10 'train' / 'test' / 'unlabelled' (label -1), imagenet2012
  'train' / 'validation' ('test' has no labels); several joined by '+' (stl10 'train+unlabelled':
  the 5k labelled then the 100k unlabelled images, index = position, each part's labels) are one
  split, labelled only if every part is. With `cache` the split is materialised in host
  memory once per process (decoded when the images have a fixed size, still encoded otherwise) and
  becomes random-access.
- `image_folder`: split `s` is the folder `data_dir/s` when it exists; otherwise split 'train' is
  `data_dir` itself (other splits then raise). A folder holds either class sub-folders (label =
  index of the sub-folder name in sorted order; files found recursively) or image files directly
  (label -1, `has_labels` False). JPEG / PNG / BMP / GIF of any size, in sorted path order,
  decoded by tf to `channels` channels (grayscale and RGBA files are converted). Images keep their
  size: the recipe's crop / resize fixes the view size. With `cache` the files' bytes are held in
  memory. Every file is decoded once when the folder is first opened (`unreadable_images`, the
  decoder training uses; results cached per file by size and mtime): an unreadable one raises
  `DataError` naming it (`data.bad_images='error'`, default) or is left out with a warning
  (`'skip'`), before anything compiles.

TensorFlow (and tfds) are imported on first use of a tf.data stream: `load_arrays`, `num_examples`
and `has_labels` of the numpy-held sets (`NUMPY_NAMES`) run without them.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import re
import socket
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from absl import logging

from ssl_jax import progress
from ssl_jax.config_checks import check_allowed
from ssl_jax.data import color_fashion_mnist, fashion_mnist
from ssl_jax.data.fashion_mnist import DataError

if TYPE_CHECKING:
    import tensorflow as tf

TFDS_NAMES = ("cifar10", "cifar100", "stl10", "imagenet2012")
NAMES = ("fashion_mnist", "color_fashion_mnist", *TFDS_NAMES, "image_folder")
FASHION_NAMES = ("fashion_mnist", "color_fashion_mnist")  # read Fashion-MNIST's IDX files
NUMPY_NAMES = FASHION_NAMES  # held in host memory as numpy arrays: read without TensorFlow

# Split sizes of the tfds sets, used while a set is not prepared yet (no pixel is read).
KNOWN_NUM_EXAMPLES = {
    "cifar10": {"train": 50_000, "test": 10_000},
    "cifar100": {"train": 50_000, "test": 10_000},
    "stl10": {"train": 5_000, "test": 8_000, "unlabelled": 100_000},
    "imagenet2012": {"train": 1_281_167, "validation": 50_000, "test": 100_000},
}
# The stored image shape of the tfds sets that have one size (ImageNet's vary).
KNOWN_IMAGE_SHAPES = {"cifar10": (32, 32, 3), "cifar100": (32, 32, 3), "stl10": (96, 96, 3)}
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
_UNLABELLED_SPLITS = {"stl10": ("unlabelled",), "imagenet2012": ("test",)}
_SPLIT_ALIASES = {"stl10": {"unlabeled": "unlabelled"}}
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif")
# config.data.bad_images: an image_folder file tf cannot decode raises DataError, or is left out
BAD_IMAGES = ("error", "skip")
CHECK_FILE = ".ssl_jax_image_check.json"  # per-file check results, in the image folder if writable
_CHECK_VERSION = 1
_CHECK_PROGRESS_FILES = 1000  # a check of at least this many files prints progress lines
_LISTED_BAD_IMAGES = 10  # files named in the DataError of bad_images='error'


@dataclasses.dataclass(frozen=True)
class Source:
    """One split of one dataset.

    `read(start, end)` yields `{'image', 'label': int32, 'index': int32}` for positions `[start,
    end)` in the split's fixed order, where `image` is whatever `decode` turns into uint8 `[H, W,
    C]` (a string of encoded bytes, or the pixels already). `lookup(index)` (a tf function of an
    int64 scalar) returns the same dict for one position, or is None when the split can only be
    streamed.
    """

    name: str
    split: str
    num_examples: int
    has_labels: bool
    channels: int
    read: Callable[[int, int], tf.data.Dataset]
    decode: Callable[[tf.Tensor], tf.Tensor]
    lookup: Callable[[tf.Tensor], dict[str, tf.Tensor]] | None


def _get(data_config: Any, key: str, default: Any) -> Any:
    """`data_config.key` (ConfigDict, dict or any object), `default` when absent or None."""
    if hasattr(data_config, "get"):
        value = data_config.get(key, default)
    else:
        value = getattr(data_config, key, default)
    return default if value is None else value


def _name(data_config: Any) -> str:
    name = data_config.name
    if name not in NAMES:
        raise DataError(f"config.data.name={name!r} is not one of {NAMES}.")
    return name


def _split_name(name: str, split: str) -> str:
    parts = [_SPLIT_ALIASES.get(name, {}).get(p.strip(), p.strip()) for p in split.split("+")]
    return "+".join(parts)


def _split_parts(name: str, split: str) -> list[str]:
    """The tfds splits of `split`: one, or several joined by '+' (e.g. stl10 'train+unlabelled')."""
    parts = _split_name(name, split).split("+")
    if len(set(parts)) != len(parts):
        raise DataError(f"{name} split {split!r} names a split twice.")
    return parts


# --------------------------------------------------------------------------------------------------
# Fashion-MNIST (IDX)


def _fashion_paths(data_config: Any, split: str) -> tuple[str, str]:
    folder = _get(data_config, "data_dir", "") or fashion_mnist.FASHION_MNIST_DIR
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


def _array_source(
    name: str, split: str, images: np.ndarray | tf.Tensor, labels: np.ndarray, has_labels: bool
) -> Source:
    """Random-access source over in-memory arrays (decoded pixels or encoded strings)."""
    import tensorflow as tf

    n = int(labels.shape[0])
    images_t = tf.constant(images)
    labels_t = tf.constant(labels, tf.int32)
    encoded = images_t.dtype == tf.string
    channels = None if encoded else int(images_t.shape[-1])

    def lookup(index):
        index = tf.cast(index, tf.int64)
        return {
            "image": tf.gather(images_t, index),
            "label": tf.gather(labels_t, index),
            "index": tf.cast(index, tf.int32),
        }

    def read(start: int, end: int) -> tf.data.Dataset:
        return tf.data.Dataset.range(start, end).map(lookup)

    return Source(name, split, n, has_labels, channels, read, tf.identity, lookup)


def _fashion_source(data_config: Any, split: str) -> Source:
    images, labels = fashion_mnist.read_split(*_fashion_paths(data_config, split))
    return _array_source("fashion_mnist", split, images, labels, True)


def _color_fashion_source(data_config: Any, split: str) -> Source:
    paths = _fashion_paths(data_config, split)
    cfg = _get(data_config, "color_fashion_mnist", None)
    images, labels = _color_fashion_arrays(
        *paths, split, color_fashion_mnist.check_config(cfg), color_fashion_mnist.cache_dir(cfg)
    )
    return _array_source("color_fashion_mnist", split, images, labels, True)


@functools.lru_cache(maxsize=4)
def _color_fashion_arrays(
    images_path: str, labels_path: str, split: str, options: Any, folder: str
) -> tuple[np.ndarray, np.ndarray]:
    items, labels = fashion_mnist.read_split(images_path, labels_path)
    out = color_fashion_mnist.load(items, labels, split, options, folder, images_path)
    return out["image"], out["label"]


# --------------------------------------------------------------------------------------------------
# tfds


def _tfds():
    import tensorflow_datasets as tfds  # imported lazily: slow, and only the tfds sets need it

    return tfds


@contextlib.contextmanager
def _unprepared_quiet():
    """absl at ERROR: tfds warns "Variant folder ... has no dataset_info.json" whenever it looks
    at a set not prepared yet, which `_tfds_prepare` says in its own words."""
    level = logging.get_verbosity()
    logging.set_verbosity(min(level, logging.ERROR))  # absl: a lower number logs less
    try:
        yield
    finally:
        logging.set_verbosity(level)


def _tfds_builder(data_config: Any):
    tfds = _tfds()
    with _unprepared_quiet():
        return tfds.builder(data_config.name, data_dir=_get(data_config, "data_dir", "") or None)


# How long the reachability check of a tfds set's download hosts may take (DNS included), seconds.
REACH_TIMEOUT_S = 8.0


def _tfds_prepare(builder, data_config: Any) -> None:
    """Download and prepare (a no-op once prepared). The archives are read from `manual_dir` where
    they are there (imagenet2012 only from there; any set's archive by its file name, e.g.
    `cifar-10-binary.tar.gz`); a set that needs a download is first checked to be reachable, so no
    network ends in one `DataError` at once, not after minutes of retries."""
    with _unprepared_quiet():
        if builder.is_prepared():
            return
    tfds = _tfds()
    manual_dir = _get(data_config, "manual_dir", "") or None
    missing = _archives_to_download(builder, manual_dir)
    if missing and not builder.MANUAL_DOWNLOAD_INSTRUCTIONS:
        reason = _unreachable(missing)
        if reason:
            raise DataError(_no_data_message(builder, manual_dir, missing, reason))
    try:
        with progress.phase(f"preparing {builder.name} in {builder.data_dir}"):
            builder.download_and_prepare(
                download_config=tfds.download.DownloadConfig(manual_dir=manual_dir)
            )
    except AssertionError as e:  # tfds reports missing manual downloads this way
        hint = ""
        if builder.name == "imagenet2012":
            hint = (
                " Download ILSVRC2012_img_train.tar and ILSVRC2012_img_val.tar from image-net.org "
                "into one folder and pass it with --config.data.manual_dir."
            )
        raise DataError(f"tfds could not prepare {builder.name}: {e}{hint}") from e
    except OSError as e:  # the network went away during the download (requests' errors too)
        if not missing:
            raise
        raise DataError(_no_data_message(builder, manual_dir, missing, repr(e))) from e


def _archives_to_download(builder, manual_dir: str | None) -> list[str]:
    """The URLs of the set's archives that are not in `manual_dir` (by the file name tfds
    registers for them)."""
    urls = []
    for url, info in (builder.url_infos or {}).items():
        name = getattr(info, "filename", None) or url.rsplit("/", 1)[-1]
        if not (manual_dir and os.path.exists(os.path.join(manual_dir, name))):
            urls.append(url)
    return urls


def _unreachable(urls: Sequence[str], timeout: float | None = None) -> str:
    """'' when the first URL's host answers a HEAD request (any HTTP status; proxies from the
    environment are used), else why not; the whole check, DNS included, within `timeout` s
    (default `REACH_TIMEOUT_S`)."""
    import urllib.error
    import urllib.request

    timeout = REACH_TIMEOUT_S if timeout is None else timeout

    def head(url: str) -> str:
        try:
            request = urllib.request.Request(url, method="HEAD")
            urllib.request.urlopen(request, timeout=timeout).close()
        except urllib.error.HTTPError:  # the server answered
            return ""
        except (OSError, ValueError) as e:
            return f"{url.split('/')[2]}: {getattr(e, 'reason', e)}"
        return ""

    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        return pool.submit(head, urls[0]).result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        return f"{urls[0].split('/')[2]}: no answer in {timeout:g} s"
    finally:
        pool.shutdown(wait=False)


def _no_data_message(builder, manual_dir, urls: Sequence[str], reason: str) -> str:
    """One line: the set, where it was looked for, why it cannot be downloaded, the ways out."""
    name = builder.name
    files = ", ".join(url.rsplit("/", 1)[-1] for url in urls)
    where = os.path.dirname(os.path.dirname(str(builder.data_dir)))  # the tfds data_dir
    return (
        f"{name} is not prepared in {where} (no {name}/{builder.version} there) and cannot be "
        f"downloaded from here ({reason}). Either prepare it on a machine with internet "
        f"(python -c \"import tensorflow_datasets as tfds; tfds.builder('{name}')"
        f'.download_and_prepare()") and copy ~/tensorflow_datasets/{name} into {where} '
        f"(or point --config.data.data_dir at the folder holding it), or put {files} into a "
        "folder and pass it with --config.data.manual_dir"
        + (f" (looked in {manual_dir})" if manual_dir else "")
        + ", or train on your own images: --config.data.name=image_folder "
        "--config.data.data_dir=DIR."
    )


def prepare(data_config: Any) -> None:
    """Makes a config's data ready to read (tfds sets: downloaded and prepared, or one clear
    `DataError`); the other sets are local files, checked when opened. Called before a run
    writes anything to its workdir."""
    if _name(data_config) in TFDS_NAMES:
        _tfds_prepare(_tfds_builder(data_config), data_config)


def _tfds_splits(builder) -> dict[str, int]:
    try:
        with _unprepared_quiet():
            return {k: int(v.num_examples) for k, v in builder.info.splits.items()}
    except Exception:  # noqa: BLE001 - info not available before preparation
        return {}


def _check_tfds_split(name: str, split: str, builder=None) -> None:
    known = set(KNOWN_NUM_EXAMPLES[name])
    if builder is not None:
        known |= set(_tfds_splits(builder))
    for part in _split_parts(name, split):
        if part not in known:
            raise DataError(
                f"{name} has splits {tuple(sorted(known))} (or several joined by '+'), "
                f"not {part!r}."
            )


def _tfds_as_dataset(builder, split: str, decoders: Any = None) -> tf.data.Dataset:
    tfds = _tfds()
    return builder.as_dataset(
        split=split,
        shuffle_files=False,
        decoders=decoders,
        read_config=tfds.ReadConfig(interleave_cycle_length=1, try_autocache=False),
    )


def _tfds_num_examples(data_config: Any, split: str) -> int:
    name = data_config.name
    parts = _split_parts(name, split)
    if len(parts) > 1:
        return sum(_tfds_num_examples(data_config, part) for part in parts)
    split = parts[0]
    builder = _tfds_builder(data_config)
    _check_tfds_split(name, split, builder)
    splits = _tfds_splits(builder)
    if split in splits:
        return splits[split]
    try:  # prepared without split info in memory (or mocked in tests): the reader's cardinality
        with _unprepared_quiet():
            n = int(_tfds_as_dataset(builder, split).cardinality())
        if n >= 0:
            return n
    except Exception:  # noqa: BLE001 - not prepared: fall back to the published sizes
        pass
    return KNOWN_NUM_EXAMPLES[name][split]


def _joined_stream(data_config: Any, parts: list[str]) -> tuple[Source, tuple]:
    """Splits joined by '+': their examples one after the other (index = position in the joined
    split), each part's labels (-1 in an unlabelled part); `has_labels` only if every part has."""
    streams = [_tfds_stream(data_config, part) for part in parts]
    sources = [src for src, _ in streams]
    shapes = {shape for _, shape in streams}
    starts = np.cumsum([0] + [src.num_examples for src in sources]).tolist()
    n = starts[-1]

    def read(start: int, end: int) -> tf.data.Dataset:
        pieces = []
        for src, lo, hi in zip(sources, starts[:-1], starts[1:], strict=True):
            a, b = max(start, lo), min(end, hi)
            if a < b:
                shift = lambda ex, d=lo: {**ex, "index": ex["index"] + d}  # noqa: E731
                pieces.append(src.read(a - lo, b - lo).take(b - a).map(shift))
        ds = pieces[0]
        for piece in pieces[1:]:
            ds = ds.concatenate(piece)
        return ds

    first = sources[0]
    has_labels = all(src.has_labels for src in sources)
    split = "+".join(parts)
    joined = Source(first.name, split, n, has_labels, first.channels, read, first.decode, None)
    return joined, (shapes.pop() if len(shapes) == 1 else (None, None, first.channels))


def _tfds_stream(data_config: Any, split: str) -> tuple[Source, tuple]:
    """The streaming `Source` of a tfds split (images still encoded) and its image shape (None
    where the size varies); splits joined by '+' are read one after the other."""
    import tensorflow as tf

    tfds = _tfds()
    name = data_config.name
    parts = _split_parts(name, split)
    if len(parts) > 1:
        return _joined_stream(data_config, parts)
    split = parts[0]
    builder = _tfds_builder(data_config)
    _tfds_prepare(builder, data_config)
    _check_tfds_split(name, split, builder)
    n = _tfds_num_examples(data_config, split)
    has_labels = split not in _UNLABELLED_SPLITS.get(name, ())
    image_shape = tuple(builder.info.features["image"].shape)
    channels = int(image_shape[-1])
    fixed_size = None not in image_shape

    def to_example(index, ex):
        label = tf.cast(ex["label"], tf.int32) if has_labels else tf.constant(-1, tf.int32)
        return {"image": ex["image"], "label": label, "index": tf.cast(index, tf.int32)}

    def read(start: int, end: int) -> tf.data.Dataset:
        sub = split if (start, end) == (0, n) else f"{split}[{start}:{end}]"
        ds = _tfds_as_dataset(builder, sub, decoders={"image": tfds.decode.SkipDecoding()})
        return ds.enumerate(start).map(to_example)

    def decode(image):
        image = tf.io.decode_image(image, channels=channels, expand_animations=False)
        return tf.ensure_shape(image, image_shape if fixed_size else (None, None, channels))

    return Source(name, split, n, has_labels, channels, read, decode, None), image_shape


def _tfds_source(data_config: Any, split: str) -> Source:
    import tensorflow as tf

    src, image_shape = _tfds_stream(data_config, split)
    if not _get(data_config, "cache", False):
        return src
    fixed_size = None not in image_shape
    images, labels = _materialise(
        _cache_key(data_config, src.split), src.read(0, src.num_examples), src.decode, fixed_size
    )
    cached = _array_source(src.name, src.split, images, labels, src.has_labels)
    return dataclasses.replace(
        cached, channels=src.channels, decode=tf.identity if fixed_size else src.decode
    )


def _tfds_arrays(data_config: Any, split: str) -> tuple[np.ndarray, np.ndarray]:
    """`load_arrays` of a tfds split: decoded once (shared with a `cache`d source)."""
    src, image_shape = _tfds_stream(data_config, split)
    if None in image_shape:
        raise DataError(
            f"{src.name} images have no fixed size ({image_shape}): the device pipeline needs "
            "one image size (config.data.pipeline='tfdata' takes any)."
        )
    key = _cache_key(data_config, src.split)
    return _materialise(key, src.read(0, src.num_examples), src.decode, True)


def _cache_key(data_config: Any, split: str) -> tuple:
    return (
        data_config.name,
        _get(data_config, "data_dir", ""),
        _get(data_config, "manual_dir", ""),
        split,
    )


_MATERIALISED: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}


def _materialise(key: tuple, ds: tf.data.Dataset, decode, fixed_size: bool):
    """Split in host memory once per process: pixels when fixed-size, encoded bytes otherwise."""
    import tensorflow as tf

    if key not in _MATERIALISED:
        if fixed_size:
            ds = ds.map(lambda ex: {**ex, "image": decode(ex["image"])}, tf.data.AUTOTUNE)
        images, labels = [], []
        for batch in ds.batch(1024).prefetch(2).as_numpy_iterator():
            images.append(batch["image"])
            labels.append(batch["label"])
        _MATERIALISED[key] = (np.concatenate(images), np.concatenate(labels).astype(np.int32))
    return _MATERIALISED[key]


def clear_cache() -> None:
    """Forget materialised splits, Fashion-MNIST arrays and folder listings (tests, notebooks)."""
    _MATERIALISED.clear()
    _ARRAYS.clear()
    fashion_mnist.read_split.cache_clear()
    _color_fashion_arrays.cache_clear()
    _list_folder.cache_clear()
    _readable_listing.cache_clear()


# --------------------------------------------------------------------------------------------------
# Image folders


def _folder_for_split(data_config: Any, split: str) -> str:
    root = _get(data_config, "data_dir", "")
    if not root:
        raise DataError("config.data.data_dir must name the image folder for name='image_folder'.")
    if not os.path.isdir(root):
        raise DataError(f"image folder {root!r} (config.data.data_dir) does not exist.")
    sub = os.path.join(root, split)
    if os.path.isdir(sub):
        return sub
    if split == "train":
        return root
    raise DataError(
        f"image_folder split {split!r}: no folder {sub!r}. Split 'train' is data_dir (or "
        "data_dir/train when it exists); any other split must be a sub-folder of data_dir. The "
        "splits are named by config.data.train_split, .eval_train_split and .eval_test_split (the "
        "evaluators' images: set it to an existing folder, e.g. 'train', or turn the evaluators "
        "off with --config.evals.<name>.every_steps=-1)."
    )


def _is_image(name: str) -> bool:
    return not name.startswith(".") and name.lower().endswith(IMAGE_EXTENSIONS)


@functools.lru_cache(maxsize=8)
def _list_folder(folder: str) -> tuple[tuple[str, ...], tuple[int, ...], bool]:
    """`(paths, labels, has_labels)` in sorted order."""
    entries = sorted(e for e in os.listdir(folder) if not e.startswith("."))
    class_dirs = [e for e in entries if os.path.isdir(os.path.join(folder, e))]
    files = [e for e in entries if _is_image(e) and os.path.isfile(os.path.join(folder, e))]
    if files and class_dirs:
        raise DataError(
            f"image folder {folder!r} holds both image files and sub-folders {class_dirs[:3]}: "
            "use either one sub-folder per class or a flat folder of images."
        )
    if files:
        paths = tuple(os.path.join(folder, f) for f in files)
        return paths, (-1,) * len(paths), False
    paths, labels = [], []
    for label, class_dir in enumerate(class_dirs):
        found = []
        for dirpath, dirnames, filenames in os.walk(os.path.join(folder, class_dir)):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            found += [os.path.join(dirpath, f) for f in filenames if _is_image(f)]
        found.sort()
        paths += found
        labels += [label] * len(found)
    if not paths:
        raise DataError(f"image folder {folder!r} holds no {'/'.join(IMAGE_EXTENSIONS)} files.")
    return tuple(paths), tuple(labels), True


def bad_images_policy(data_config: Any) -> str:
    """`data.bad_images` ('error' when absent); another value raises ConfigError naming the
    allowed ones."""
    policy = _get(data_config, "bad_images", "error")
    check_allowed("data.bad_images", policy, BAD_IMAGES)
    return policy


def _decode_folder_image(image: tf.Tensor, channels: int) -> tf.Tensor:
    """Encoded bytes → uint8 `[H, W, channels]`: how training and the check decode a folder's file."""
    import tensorflow as tf

    return tf.io.decode_image(image, channels=channels, expand_animations=False)


def image_error(path: str, channels: int) -> str | None:
    """Why tf cannot read and decode the file at `path` as training does (its error's first line),
    or None when it can."""
    import tensorflow as tf

    try:
        _decode_folder_image(tf.io.read_file(path), channels)
    except tf.errors.OpError as e:
        message = re.sub(r"\{\{[^}]*\}\}\s*", "", e.message or type(e).__name__)
        return re.sub(r"\s*\[Op:.*$", "", message.strip().splitlines()[0]) or type(e).__name__
    return None


def _check_cache_path(folder: str) -> str:
    """Where the check of `folder` is cached: `CHECK_FILE` in the folder when it is writable, else
    `$XDG_CACHE_HOME/ssl_jax/image_check/<hash of its path>.json` (default `~/.cache`)."""
    if os.access(folder, os.W_OK):
        return os.path.join(folder, CHECK_FILE)
    digest = hashlib.sha256(os.path.abspath(folder).encode()).hexdigest()[:20]
    return os.path.join(color_fashion_mnist.cache_dir(None), "image_check", f"{digest}.json")


def _read_check_cache(path: str, channels: int) -> dict[str, list]:
    """`{relative path: [size, mtime_ns, error or None]}` of an earlier check ({} when none)."""
    try:
        with open(path) as f:
            cached = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(cached, dict) or cached.get("version") != _CHECK_VERSION:
        return {}
    files = cached.get("files")
    return files if cached.get("channels") == channels and isinstance(files, dict) else {}


def _write_check_cache(path: str, channels: int, records: dict[str, list]) -> None:
    """Replace the cache file at once (concurrent processes each write a whole file)."""
    tmp = f"{path}.{socket.gethostname()}.{os.getpid()}.tmp"
    body = {"version": _CHECK_VERSION, "channels": channels, "files": records}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w") as f:
            json.dump(body, f, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError as e:  # the next open checks again
        logging.warning("image check of %s not cached: %s", os.path.dirname(path), e)


def unreadable_images(folder: str, paths: Sequence[str], channels: int) -> dict[str, str]:
    """`{path: why}` of the files of `paths` (under `folder`) that tf cannot decode as training does.

    Each file is decoded once (`image_error`, in threads); the results are cached
    (`_check_cache_path`) per relative path, size and mtime, so opening an unchanged folder again
    costs its listing and a `stat` per file, and a changed one re-decodes only the changed files.
    """
    cache_path = _check_cache_path(folder)
    cached = _read_check_cache(cache_path, channels)
    records: dict[str, list] = {}  # the cache file's, for every file that has a stat
    rels: dict[str, str] = {}
    errors: dict[str, str] = {}
    todo: list[str] = []
    prefix = os.path.join(folder, "")  # the listing's paths start with it (relpath is slow)
    for path in paths:
        rel = path[len(prefix) :] if path.startswith(prefix) else os.path.relpath(path, folder)
        try:
            stat = os.stat(path)
        except OSError as e:  # vanished, broken link: reported, not cached
            errors[path] = e.strerror or str(e)
            continue
        key = [stat.st_size, stat.st_mtime_ns]
        hit = cached.get(rel)
        if isinstance(hit, list) and len(hit) == 3 and hit[:2] == key:
            records[rel] = hit
        else:
            records[rel] = [*key, None]
            todo.append(path)
        rels[path] = rel
    if todo:
        many = len(todo) >= _CHECK_PROGRESS_FILES
        phase = progress.phase(f"checking {len(todo)} images in {folder}")
        # libjpeg's own lines for a corrupt file ('Corrupt JPEG data: ...') are not printed: the
        # error below names the file and the decoder's message
        with phase if many else contextlib.nullcontext(), progress.captured_stderr():
            with concurrent.futures.ThreadPoolExecutor() as pool:
                for path, error in zip(todo, pool.map(image_error, todo, [channels] * len(todo))):
                    records[rels[path]][2] = error
    if todo or records.keys() != cached.keys():
        _write_check_cache(cache_path, channels, records)
    for path, rel in rels.items():
        if records[rel][2] is not None:
            errors[path] = records[rel][2]
    return {path: errors[path] for path in paths if path in errors}


@functools.lru_cache(maxsize=8)
def _readable_listing(
    folder: str, channels: int, policy: str
) -> tuple[tuple[str, ...], tuple[int, ...], bool]:
    """`_list_folder` without the files tf cannot decode: DataError naming them ('error'), or
    one warning per file and their count ('skip'; once per process)."""
    paths, labels, has_labels = _list_folder(folder)
    bad = unreadable_images(folder, paths, channels)
    if not bad:
        return paths, labels, has_labels
    if policy == "error":
        lines = [f"  {path}: {why}" for path, why in list(bad.items())[:_LISTED_BAD_IMAGES]]
        if len(bad) > _LISTED_BAD_IMAGES:
            lines.append(f"  ... and {len(bad) - _LISTED_BAD_IMAGES} more")
        raise DataError(
            f"{len(bad)} of {len(paths)} files in image folder {folder!r} cannot be decoded:\n"
            + "\n".join(lines)
            + f"\nReplace or delete them, or pass --config.data.bad_images=skip to leave them out "
            f"and use the other {len(paths) - len(bad)}."
        )
    for path, why in bad.items():
        logging.warning("skipped unreadable image %s: %s", path, why)
    if len(bad) == len(paths):
        raise DataError(
            f"none of the {len(paths)} files in image folder {folder!r} can be decoded."
        )
    logging.warning(
        "image folder %s: %d of %d files skipped (config.data.bad_images='skip'), %d used",
        folder,
        len(bad),
        len(paths),
        len(paths) - len(bad),
    )
    keep = [i for i, path in enumerate(paths) if path not in bad]
    return tuple(paths[i] for i in keep), tuple(labels[i] for i in keep), has_labels


def _folder_listing(data_config: Any, split: str) -> tuple[tuple[str, ...], tuple[int, ...], bool]:
    """`(paths, labels, has_labels)` of a split's decodable files, per `data.bad_images`: everything
    that reads an image folder (both pipelines, `num_examples`, `has_labels`) goes through here."""
    policy = bad_images_policy(data_config)
    folder = _folder_for_split(data_config, split)
    return _readable_listing(folder, int(_get(data_config, "channels", 3)), policy)


def _folder_source(data_config: Any, split: str) -> Source:
    import tensorflow as tf

    paths, labels, has_labels = _folder_listing(data_config, split)
    channels = int(_get(data_config, "channels", 3))
    if _get(data_config, "cache", False):
        encoded = np.array([tf.io.gfile.GFile(p, "rb").read() for p in paths], dtype=object)
        src = _array_source("image_folder", split, encoded, np.array(labels), has_labels)
    else:
        paths_t = tf.constant(paths)
        labels_t = tf.constant(labels, tf.int32)

        def lookup(index):
            index = tf.cast(index, tf.int64)
            return {
                "image": tf.io.read_file(tf.gather(paths_t, index)),
                "label": tf.gather(labels_t, index),
                "index": tf.cast(index, tf.int32),
            }

        def read(start: int, end: int) -> tf.data.Dataset:
            return tf.data.Dataset.range(start, end).map(lookup)

        src = Source(
            "image_folder", split, len(paths), has_labels, channels, read, tf.identity, lookup
        )

    def decode(image):
        return tf.ensure_shape(_decode_folder_image(image, channels), (None, None, channels))

    return dataclasses.replace(src, channels=channels, decode=decode)


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
        return _folder_source(data_config, split)
    return _tfds_source(data_config, split)


def num_examples(data_config: Any, split: str) -> int:
    """Examples in `split` without decoding pixels: IDX header, tfds info (or the published size
    while a tfds set is not prepared), or the decodable file count of an image folder."""
    name = _name(data_config)
    if name in FASHION_NAMES:
        return _fashion_num_examples(data_config, split)
    if name == "image_folder":
        return len(_folder_listing(data_config, split)[0])
    return _tfds_num_examples(data_config, split)


def image_shape(data_config: Any, split: str) -> tuple[int, int, int] | None:
    """`(H, W, C)` of every stored image of `split`, known without decoding one (the IDX header,
    `color_fashion_mnist`'s size, `KNOWN_IMAGE_SHAPES`); None where images may differ or are only
    known by decoding them (ImageNet, image folders)."""
    name = _name(data_config)
    if name == "fashion_mnist":
        dims = fashion_mnist.read_idx_header(_fashion_paths(data_config, split)[0])[1]
        return (int(dims[1]), int(dims[2]), 1)
    if name == "color_fashion_mnist":
        size = color_fashion_mnist.check_config(_get(data_config, "color_fashion_mnist", None)).size
        return (size, size, 3)
    return KNOWN_IMAGE_SHAPES.get(name)


def has_labels(data_config: Any, split: str) -> bool:
    """False for stl10 'unlabelled' (and a '+' join with it), imagenet2012 'test' and flat image
    folders."""
    name = _name(data_config)
    if name in FASHION_NAMES:
        _fashion_paths(data_config, split)
        return True
    if name == "image_folder":
        return _folder_listing(data_config, split)[2]
    _check_tfds_split(name, split)
    unlabelled = _UNLABELLED_SPLITS.get(name, ())
    return not any(part in unlabelled for part in _split_parts(name, split))


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
        cfg = _get(data_config, "color_fashion_mnist", None)
        return _color_fashion_arrays(
            *paths, split, color_fashion_mnist.check_config(cfg), color_fashion_mnist.cache_dir(cfg)
        )
    if name != "image_folder":
        return _tfds_arrays(data_config, split)
    key = (*_cache_key(data_config, split), int(_get(data_config, "channels", 3)))
    if key not in _ARRAYS:
        paths = _folder_listing(data_config, split)[0]
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
