"""Shared helpers for the data tests: tiny IDX datasets and configs matching docs/design.md, and
CMC's channel split of a converted image."""

from __future__ import annotations

import contextlib
import gzip
import os
import struct
from typing import Any

import ml_collections
import numpy as np

from ssl_jax.data import color, recipes


def write_idx(path: str, array: np.ndarray, magic: int | None = None, gz: bool = True) -> None:
    """Write `array` (uint8) as an IDX file; `magic` overrides the header's magic number."""
    array = np.asarray(array, np.uint8)
    magic = (0x08 << 8 | array.ndim) if magic is None else magic
    data = struct.pack(">i", magic) + struct.pack(f">{array.ndim}i", *array.shape) + array.tobytes()
    opener = gzip.open if gz else open
    with opener(path, "wb") as f:
        f.write(data)


def make_fashion_dir(folder: str, num_train: int = 64, num_test: int = 40, seed: int = 0) -> str:
    """A Fashion-MNIST-layout folder with random 28 × 28 images; image i has pixel [0, 0] = i %
    256."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    for prefix, n in (("train", num_train), ("t10k", num_test)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        images[:, 0, 0] = np.arange(n) % 256
        write_idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"), images)
        write_idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"), np.arange(n) % 10)
    return folder


def make_config(data_dir: str = "", *, seed: int = 0, global_batch_size: int = 8, **data):
    """A small config with the schema of docs/design.md (Fashion-MNIST unless overridden)."""
    config = ml_collections.ConfigDict()
    config.seed = seed
    config.global_batch_size = global_batch_size
    config.total_steps = -1
    config.num_epochs = 1.0
    defaults = dict(
        name="fashion_mnist",
        data_dir=data_dir,
        manual_dir="",
        train_split="train",
        eval_train_split="train",
        eval_test_split="test",
        image_size=28,
        eval_crop_fraction=1.0,
        channels=3,
        mean=(0.286,) * 3,
        std=(0.353,) * 3,
        views=("strong", "strong"),
        recipes={"strong": recipes.mocov2(28), "weak": recipes.weak(28)},
        shuffle_buffer=64,
        cache=False,
    )
    defaults.update(data)
    config.data = ml_collections.ConfigDict(defaults)
    return config


@contextlib.contextmanager
def mock_tfds(num_examples: int):
    """`tfds.testing.mock_data` (random examples of each set's features, no prepare) with the
    builders saying they are prepared: the mock stands for prepared data, so the loader's check
    for a download that cannot be had (`tfds_source._tfds_prepare`) does not run. The real prepare
    path has its own tests (`tests/data/sources/test_tfds_prepare.py`)."""
    from unittest import mock

    import tensorflow_datasets as tfds

    builder = "tensorflow_datasets.core.dataset_builder.DatasetBuilder.is_prepared"
    with tfds.testing.mock_data(num_examples=num_examples), mock.patch(builder, lambda self: True):
        yield


def split_channels(x: Any, space: str) -> tuple[Any, Any]:
    """CMC's two views of a converted image `[..., 3]` (tf or jnp): `(x[..., :1], x[..., 1:])` =
    (L, ab), (Y, CbCr) or (Y, DbDr), i.e. `[..., 1]` and `[..., 2]`."""
    k = color.check_space(space).split
    return x[..., :k], x[..., k:]
