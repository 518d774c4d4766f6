"""User image folders (`image_folder`): a split's folder, the scan of its files, the decode check of
every file with its on-disk cache, and the split as a `Source`.

Split `s` is the folder `data_dir/s` when it exists; otherwise split 'train' is `data_dir` itself
(other splits then raise). A folder holds either class sub-folders (label = index of the sub-folder
name in sorted order; files found recursively) or image files directly (label -1, `has_labels`
False). JPEG / PNG / BMP / GIF of any size, in sorted path order, decoded by tf to `channels`
channels (grayscale and RGBA files are converted). Images keep their size: the recipe's crop /
resize fixes the view size. With `cache` the files' bytes are held in memory. Every file is decoded
once when the folder is first opened (`unreadable_images`, the decoder training uses; results
cached per file by size and mtime): an unreadable one raises `DataError` naming it
(`data.bad_images='error'`, default) or is left out with a warning (`'skip'`), before anything
compiles.

TensorFlow is imported inside the functions that decode or read files, never at module level.
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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from absl import logging

from ssl_jax.config_checks import check_allowed
from ssl_jax.data.sources import color_fashion_mnist
from ssl_jax.data.sources.fashion_mnist import DataError
from ssl_jax.data.sources.source import Source, array_source, config_get
from ssl_jax.output import progress

if TYPE_CHECKING:
    import tensorflow as tf

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif")
# config.data.bad_images: an image_folder file tf cannot decode raises DataError, or is left out
BAD_IMAGES = ("error", "skip")
CHECK_FILE = ".ssl_jax_image_check.json"  # per-file check results, in the image folder if writable
_CHECK_VERSION = 1
_CHECK_PROGRESS_FILES = 1000  # a check of at least this many files prints progress lines
_LISTED_BAD_IMAGES = 10  # files named in the DataError of bad_images='error'


def folder_for_split(data_config: Any, split: str) -> str:
    """The folder of `split` (the layout above); `DataError` when there is none."""
    root = config_get(data_config, "data_dir", "")
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
def list_folder(folder: str) -> tuple[tuple[str, ...], tuple[int, ...], bool]:
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
    policy = config_get(data_config, "bad_images", "error")
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
    """`list_folder` without the files tf cannot decode: DataError naming them ('error'), or
    one warning per file and their count ('skip'; once per process)."""
    paths, labels, has_labels = list_folder(folder)
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


def listing(data_config: Any, split: str) -> tuple[tuple[str, ...], tuple[int, ...], bool]:
    """`(paths, labels, has_labels)` of a split's decodable files, per `data.bad_images`: everything
    that reads an image folder (both pipelines, `num_examples`, `has_labels`) goes through here."""
    policy = bad_images_policy(data_config)
    folder = folder_for_split(data_config, split)
    return _readable_listing(folder, int(config_get(data_config, "channels", 3)), policy)


def open_source(data_config: Any, split: str) -> Source:
    """The `Source` of a split's decodable files (read from disk, or their bytes held in memory
    with `cache`), decoded to `data.channels` channels."""
    import tensorflow as tf

    paths, labels, has_labels = listing(data_config, split)
    channels = int(config_get(data_config, "channels", 3))
    if config_get(data_config, "cache", False):
        encoded = np.array([tf.io.gfile.GFile(p, "rb").read() for p in paths], dtype=object)
        src = array_source("image_folder", split, encoded, np.array(labels), has_labels)
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


def clear_cache() -> None:
    """Forget the folder listings (the check's cache file stays)."""
    list_folder.cache_clear()
    _readable_listing.cache_clear()
