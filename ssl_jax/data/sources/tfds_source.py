"""The tfds sets (`cifar10`, `cifar100`, `stl10`, `imagenet2012`): their builders, the prepare
step, their splits' sizes and labels, and each split as a `Source` or as arrays in host memory.

Builders under `data_dir` (tfds's default when empty), downloaded and prepared on first use
(imagenet2012 from the archives in `manual_dir`). tfds split names: stl10 'train' / 'test' /
'unlabelled' (label -1), imagenet2012 'train' / 'validation' ('test' has no labels); several joined
by '+' (stl10 'train+unlabelled': the 5k labelled then the 100k unlabelled images, index =
position, each part's labels) are one split, labelled only if every part is. With `cache` the split
is materialised in host memory once per process (decoded when the images have a fixed size, still
encoded otherwise) and becomes random-access.

TensorFlow and tfds are imported on first use, inside the functions: `has_labels` and the published
sizes need neither, and importing this module loads neither.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from absl import logging

from ssl_jax.data.sources.fashion_mnist import DataError
from ssl_jax.data.sources.source import Source, array_source, cache_key, config_get
from ssl_jax.output import progress

if TYPE_CHECKING:
    import tensorflow as tf

# Split sizes of the tfds sets, used while a set is not prepared yet (no pixel is read).
KNOWN_NUM_EXAMPLES = {
    "cifar10": {"train": 50_000, "test": 10_000},
    "cifar100": {"train": 50_000, "test": 10_000},
    "stl10": {"train": 5_000, "test": 8_000, "unlabelled": 100_000},
    "imagenet2012": {"train": 1_281_167, "validation": 50_000, "test": 100_000},
}
# The stored image shape of the tfds sets that have one size (ImageNet's vary).
KNOWN_IMAGE_SHAPES = {"cifar10": (32, 32, 3), "cifar100": (32, 32, 3), "stl10": (96, 96, 3)}
_UNLABELLED_SPLITS = {"stl10": ("unlabelled",), "imagenet2012": ("test",)}
_SPLIT_ALIASES = {"stl10": {"unlabeled": "unlabelled"}}


def _split_name(name: str, split: str) -> str:
    parts = [_SPLIT_ALIASES.get(name, {}).get(p.strip(), p.strip()) for p in split.split("+")]
    return "+".join(parts)


def _split_parts(name: str, split: str) -> list[str]:
    """The tfds splits of `split`: one, or several joined by '+' (e.g. stl10 'train+unlabelled')."""
    parts = _split_name(name, split).split("+")
    if len(set(parts)) != len(parts):
        raise DataError(f"{name} split {split!r} names a split twice.")
    return parts


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
        return tfds.builder(
            data_config.name, data_dir=config_get(data_config, "data_dir", "") or None
        )


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
    manual_dir = config_get(data_config, "manual_dir", "") or None
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
    """Download and prepare the set of `data_config` (a no-op once prepared), or one clear
    `DataError`."""
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


def num_examples(data_config: Any, split: str) -> int:
    """Examples in a tfds split without decoding pixels: the prepared set's info, else its
    reader's cardinality, else the published size while the set is not prepared; a '+' join
    sums its parts."""
    name = data_config.name
    parts = _split_parts(name, split)
    if len(parts) > 1:
        return sum(num_examples(data_config, part) for part in parts)
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
    n = num_examples(data_config, split)
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


def open_source(data_config: Any, split: str) -> Source:
    """The `Source` of a tfds split, preparing the set on first use; with `cache`, held in host
    memory and random-access."""
    import tensorflow as tf

    src, image_shape = _tfds_stream(data_config, split)
    if not config_get(data_config, "cache", False):
        return src
    fixed_size = None not in image_shape
    images, labels = _materialise(
        cache_key(data_config, src.split), src.read(0, src.num_examples), src.decode, fixed_size
    )
    cached = array_source(src.name, src.split, images, labels, src.has_labels)
    return dataclasses.replace(
        cached, channels=src.channels, decode=tf.identity if fixed_size else src.decode
    )


def arrays(data_config: Any, split: str) -> tuple[np.ndarray, np.ndarray]:
    """`load_arrays` of a tfds split: decoded once (shared with a `cache`d source)."""
    src, image_shape = _tfds_stream(data_config, split)
    if None in image_shape:
        raise DataError(
            f"{src.name} images have no fixed size ({image_shape}): the device pipeline needs "
            "one image size (config.data.pipeline='tfdata' takes any)."
        )
    key = cache_key(data_config, src.split)
    return _materialise(key, src.read(0, src.num_examples), src.decode, True)


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


def has_labels(name: str, split: str) -> bool:
    """False for stl10 'unlabelled' (and a '+' join with it) and imagenet2012 'test'."""
    _check_tfds_split(name, split)
    unlabelled = _UNLABELLED_SPLITS.get(name, ())
    return not any(part in unlabelled for part in _split_parts(name, split))


def clear_cache() -> None:
    """Forget the splits materialised in host memory."""
    _MATERIALISED.clear()
