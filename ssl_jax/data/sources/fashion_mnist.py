"""Fashion-MNIST on disk: where its IDX files are, their checked reader and the class names.

A leaf of `ssl_jax.data`: `datasets` (the loader) and `color_fashion_mnist` (the generator) both
read the items here; `DataError`, the error of missing or corrupt data that every loader raises,
is defined here for that reason.
"""

from __future__ import annotations

import functools
import gzip
import os
import struct
import zlib
from typing import Any

import numpy as np

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_MNIST_INSTALL = (
    "Install it with `sudo apt-get install -y dataset-fashion-mnist` or pass the folder holding "
    "train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and "
    "t10k-labels-idx1-ubyte.gz with --config.data.data_dir"
)
_FASHION_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
IDX_IMAGES_MAGIC = 2051
IDX_LABELS_MAGIC = 2049

CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)


class DataError(ValueError):
    """Missing or corrupt data; the message says how to fix it."""


def split_paths(folder: str, split: str, name: str = "fashion_mnist") -> tuple[str, str]:
    """The images and labels files of `split` in `folder`; `DataError` when a file is missing."""
    if split not in _FASHION_FILES:
        raise DataError(
            f"{name} has splits {tuple(_FASHION_FILES)}, not {split!r} "
            "(config.data.train_split / eval_train_split / eval_test_split)."
        )
    paths = tuple(os.path.join(folder, f) for f in _FASHION_FILES[split])
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise DataError(
            f"Fashion-MNIST files not found: {', '.join(missing)}. {FASHION_MNIST_INSTALL}."
        )
    return paths  # type: ignore[return-value]


def _read_exact(f: Any, n: int, path: str, what: str) -> bytes:
    try:
        data = f.read(n)
    except (EOFError, OSError, zlib.error) as e:  # gzip raises these on truncated / corrupt streams
        raise DataError(
            f"{path}: corrupt or truncated gzip stream while reading {what} ({e})."
        ) from e
    if len(data) != n:
        raise DataError(f"{path}: truncated: {what} needs {n} bytes, the file holds {len(data)}.")
    return data


def read_idx_header(path: str) -> tuple[int, tuple[int, ...]]:
    """`(magic, dims)` of a gzipped IDX file, reading only its header."""
    with gzip.open(path, "rb") as f:
        return _read_idx_header(f, path)


def _read_idx_header(f: Any, path: str) -> tuple[int, tuple[int, ...]]:
    (magic,) = struct.unpack(">i", _read_exact(f, 4, path, "the magic number"))
    if magic not in (IDX_IMAGES_MAGIC, IDX_LABELS_MAGIC):
        raise DataError(
            f"{path}: magic number {magic} is neither {IDX_IMAGES_MAGIC} (images) nor "
            f"{IDX_LABELS_MAGIC} (labels): not an unsigned-byte IDX file."
        )
    ndim = magic & 0xFF
    dims = struct.unpack(f">{ndim}i", _read_exact(f, 4 * ndim, path, "the dimensions"))
    if any(d < 0 for d in dims):
        raise DataError(f"{path}: negative dimension in header {dims}.")
    return magic, dims


def read_idx(path: str, expected_magic: int) -> np.ndarray:
    """Whole gzipped IDX file (unsigned bytes) as a uint8 array shaped by its header.

    Raises `DataError` on a wrong magic number, a short or over-long payload or a corrupt gzip
    stream.
    """
    try:
        with gzip.open(path, "rb") as f:
            magic, dims = _read_idx_header(f, path)
            if magic != expected_magic:
                raise DataError(
                    f"{path}: magic number {magic}, expected {expected_magic} "
                    f"({'images' if expected_magic == IDX_IMAGES_MAGIC else 'labels'})."
                )
            size = int(np.prod(dims, dtype=np.int64))
            data = _read_exact(f, size, path, f"a payload of shape {dims}")
            if _read_exact_or_less(f, path):
                raise DataError(f"{path}: trailing bytes after the {dims} payload: corrupt file.")
    except OSError as e:  # not a gzip file at all (BadGzipFile) or unreadable
        raise DataError(f"{path}: cannot read as gzipped IDX ({e}).") from e
    return np.frombuffer(data, np.uint8).reshape(dims)


def _read_exact_or_less(f: Any, path: str) -> bytes:
    try:
        return f.read(1)
    except (EOFError, OSError, zlib.error) as e:
        raise DataError(f"{path}: corrupt or truncated gzip stream ({e}).") from e


@functools.lru_cache(maxsize=4)
def read_split(images_path: str, labels_path: str) -> tuple[np.ndarray, np.ndarray]:
    """A split's checked items, uint8 `[N, 28, 28, 1]`, and int32 labels `[N]` (cached)."""
    images = read_idx(images_path, IDX_IMAGES_MAGIC)
    labels = read_idx(labels_path, IDX_LABELS_MAGIC)
    if images.ndim != 3 or images.shape[1:] != (28, 28):
        raise DataError(f"{images_path}: images of shape {images.shape[1:]}, expected (28, 28).")
    if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
        raise DataError(
            f"{labels_path}: {labels.shape[0]} labels for {images.shape[0]} "
            f"images in {images_path}."
        )
    if labels.size and labels.max() > 9:
        raise DataError(f"{labels_path}: label {labels.max()} outside 0..9: corrupt file.")
    return images[..., None], labels.astype(np.int32)
