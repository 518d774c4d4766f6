"""The device-resident input pipeline (`config.data.pipeline = 'device'`): no TensorFlow in the loop.

The train split's uint8 images are read once on the host (`datasets.load_arrays`: IDX files,
`color_fashion_mnist`'s `.npz`, tfds `as_numpy`, an image folder of same-size images) and placed
in device memory, **replicated on every device**: each device gathers its own rows of the global
batch from its copy with no collective, and the whole recipe runs inside the jitted step
(`device/recipe.device_views`). The limit: a split may take at most `MAX_SPLIT_FRACTION` of one
device's memory (Fashion-MNIST 47 MB, CIFAR-10 154 MB, STL-10's 100k unlabelled 2.8 GB; an H100
holds 80 GB); a larger one is refused before anything compiles. ImageNet stays on tf.data.

The order: epoch `e` visits the split (its first `data.train_subset` rows when > 0) in the
permutation `np.random.default_rng([seed, 0, e]).permutation(n)`; step `s` takes positions
`[t·G, (t+1)·G)` of it (`t = s mod steps_per_epoch`, the remainder dropped), process `p` feeds
positions `[t·G + p·b, t·G + (p+1)·b)` to its devices (`b = G / process_count`). The host sends only
those int32 indices (and labels) per step, so exact resume follows from the step alone, every
process computes the same permutation, and `batch['index']` is the example's index in the split
(the bank methods work unchanged).

`'auto'`: `'device'` when the dataset has a device loader, every recipe op has a device version
and the split fits in a quarter of one device's memory (on CPU: of the host's RAM over the local
devices), the split's size taken from its row count and its known image shape
(`datasets.image_shape`), no pixel read (an image folder, whose sizes only decoding tells, stays
on tf.data unless asked for 'device'); else `'tfdata'`. On a GPU/TPU that is the point of this
pipeline. On CPU it was chosen by measurement (`benchmarks/device_pipeline.py`;
docs/device_pipeline.md, "Speed"): the same cores run the augmentation in the step instead of in
tf.data's threads, at no loss, and TensorFlow stays out of the process. A recipe with
`rand_augment` stays on tf.data on CPU: the device version computes all 15 ops for every image,
several times the host's partitioned one.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import numpy as np

from ssl_jax.config_checks import ConfigError
from ssl_jax.data import datasets, recipe_ops, train_split
from ssl_jax.data.device import recipe as device_recipe
from ssl_jax.data.sources import color_fashion_mnist
from ssl_jax.parallel import sharding

PIPELINES = ("tfdata", "device", "auto")
# Datasets whose train split `datasets.load_arrays` reads whole (ImageNet: tf.data only).
DEVICE_DATASETS = (
    "fashion_mnist",
    "color_fashion_mnist",
    "cifar10",
    "cifar100",
    "stl10",
    "image_folder",
)
MAX_SPLIT_FRACTION = 0.5  # of one device's memory, for 'device'
AUTO_SPLIT_FRACTION = 0.25  # of one device's memory, for 'auto'
_SHUFFLE_TAG = 0


def unsupported_ops(data) -> list[tuple[str, str]]:
    """`(view, op)` pairs of the recipes with no device version."""
    known = (*device_recipe.RECIPE_OPS, *recipe_ops.FLOAT_OPS)
    return [
        (v, o) for v in data.views for o in (op["op"] for op in data.recipes[v]) if o not in known
    ]


def check_config(data) -> None:
    """`data.pipeline`'s value; with 'device', a dataset with a device loader and recipes whose every
    op has a device version. Raises ConfigError (no data read, nothing compiled)."""
    choice = data.get("pipeline", "tfdata")
    if choice not in PIPELINES:
        raise ConfigError(f"config.data.pipeline={choice!r}; allowed: {PIPELINES}")
    if choice != "device":
        return
    if data.name not in DEVICE_DATASETS:
        raise ConfigError(
            f"config.data.pipeline='device' holds the train split in device memory; "
            f"{data.name} is not loaded that way (allowed: {DEVICE_DATASETS}): use 'tfdata'"
        )
    bad = unsupported_ops(data)
    if bad:
        raise ConfigError(
            f"config.data.pipeline='device': recipe {bad[0][0]!r} op {bad[0][1]!r} has no device "
            f"version (device ops: {tuple(device_recipe.RECIPE_OPS)}); use 'tfdata'"
        )
    for view in data.views:
        recipe_ops.validate_recipe(view, tuple(data.recipes[view]), int(data.channels))


def device_memory(device: jax.Device | None = None) -> int | None:
    """Bytes one device can hold (`memory_stats()['bytes_limit']`); on CPU, the host's RAM shared
    by the local devices; None when unknown."""
    device = device or jax.local_devices()[0]
    try:
        stats = device.memory_stats() or {}
    except Exception:  # noqa: BLE001 - backends without memory stats
        stats = {}
    if "bytes_limit" in stats:
        return int(stats["bytes_limit"])
    if device.platform == "cpu":
        try:
            ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            return None
        return int(ram) // max(1, jax.local_device_count())
    return None


def _gib(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def split_shape(config) -> tuple[int, ...] | None:
    """`(n, H, W, C)` of the train split as the device table holds it (`num_train` rows), from the
    row count and `datasets.image_shape`, no pixel read; None when the shape is only known by
    decoding (image folders, ImageNet)."""
    shape = datasets.image_shape(config.data, config.data.train_split)
    return None if shape is None else (train_split.num_train(config), *shape)


def resolve(config) -> str:
    """`'tfdata'` or `'device'` for `config.data.pipeline` (`'auto'` decided as the module doc
    says, from `split_shape`: no data is read; color_fashion_mnist's item views, composited on the
    host, take 'tfdata' and refuse 'device': `color_fashion_mnist.check_views`)."""
    data = config.data
    color_fashion_mnist.check_views(data)
    choice = data.get("pipeline", "tfdata")
    if choice != "auto":
        return choice
    if (
        data.name not in DEVICE_DATASETS
        or unsupported_ops(data)
        or color_fashion_mnist.item_views(data)
    ):
        return "tfdata"
    ops = {op["op"] for view in data.views for op in data.recipes[view]}
    if jax.default_backend() == "cpu" and "rand_augment" in ops:
        return "tfdata"
    limit, shape = device_memory(), split_shape(config)
    if limit is None or shape is None:
        return "tfdata"
    return "device" if np.prod(shape) <= AUTO_SPLIT_FRACTION * limit else "tfdata"


def _arrays(config) -> tuple[np.ndarray, np.ndarray]:
    images, labels = datasets.load_arrays(config.data, config.data.train_split)
    n = train_split.num_train(config)
    return images[:n], labels[:n]


@dataclasses.dataclass(frozen=True)
class DeviceData:
    """The train split in device memory: `images` uint8 `[n, H, W, C_source]` replicated over the
    mesh, `labels` int32 `[n]` on the host."""

    images: jax.Array
    labels: np.ndarray

    @property
    def num_examples(self) -> int:
        return int(self.labels.shape[0])


def load(config, mesh: jax.sharding.Mesh) -> DeviceData:
    """Read the train split and place it on every device of `mesh` (once per run). A split larger
    than `MAX_SPLIT_FRACTION` of one device's memory raises ConfigError naming both sizes."""
    images, labels = _arrays(config)
    limit = device_memory(mesh.devices.flat[0])
    if limit is not None and images.nbytes > MAX_SPLIT_FRACTION * limit:
        raise ConfigError(
            f"config.data.pipeline='device': {config.data.name}/{config.data.train_split} is "
            f"{_gib(images.nbytes)} ({images.shape[0]} images of {images.shape[1:]}); one device "
            f"holds {_gib(limit)} and the split may take at most {MAX_SPLIT_FRACTION:.0%} of it "
            "(it is replicated on every device). Use config.data.pipeline='tfdata' or a smaller "
            "config.data.train_subset."
        )
    placed = jax.make_array_from_callback(
        images.shape, sharding.replicated(mesh), lambda index: images[index]
    )
    return DeviceData(placed, labels)


def table_spec(config, mesh: jax.sharding.Mesh) -> jax.ShapeDtypeStruct:
    """The replicated image table the step reads, as a sharded `jax.ShapeDtypeStruct`: its shape
    from `split_shape`; an image folder's from its first image (the one file read)."""
    shape = split_shape(config)
    if shape is None:
        first = datasets.first_images(config.data, config.data.train_split, 1)[0]
        shape = (train_split.num_train(config), *first.shape)
    return jax.ShapeDtypeStruct(shape, jnp.uint8, sharding=sharding.replicated(mesh))


def epoch_permutation(seed: int, epoch: int, n: int) -> np.ndarray:
    """The order of epoch `epoch`: a permutation of `range(n)` from `(seed, epoch)` alone."""
    return np.random.default_rng([int(seed), _SHUFFLE_TAG, int(epoch)]).permutation(n)


def index_batches(
    config,
    labels: np.ndarray,
    *,
    start_step: int = 0,
    process_index: int = 0,
    process_count: int = 1,
) -> Iterator[dict[str, np.ndarray]]:
    """Endless host-local batches `{'index': int32 [b], 'label': int32 [b]}` for step `start_step`
    onwards (the module doc's order); `b = global_batch_size / process_count`."""
    global_batch = int(config.global_batch_size)
    b = train_split.batch_rows(config, process_index, process_count)
    if start_step < 0:
        raise ValueError(f"start_step={start_step} must be >= 0.")
    n = int(labels.shape[0])
    steps_per_epoch = train_split.steps_per_epoch(config, n)
    step, epoch, order = start_step, None, None
    while True:
        e, t = divmod(step, steps_per_epoch)
        if e != epoch:
            epoch, order = e, epoch_permutation(config.seed, e, n)
        start = t * global_batch + process_index * b
        rows = order[start : start + b].astype(np.int32)
        yield {"index": rows, "label": labels[rows].astype(np.int32)}
        step += 1


def step_views(data, images: jax.Array, index: jax.Array, rng: jax.Array, dtype) -> tuple:
    """Inside the jitted step: the batch's rows of the device table (`images[index]`, each device
    its own rows), in `data.channels`, and every view's recipe (`device_recipe.device_views`)."""
    rows = train_split.adapt_channels(images[index], int(data.channels))
    recipes = tuple(tuple(dict(op) for op in data.recipes[v]) for v in data.views)
    return device_recipe.device_views(rows, recipes, rng, tuple(data.mean), tuple(data.std), dtype)
