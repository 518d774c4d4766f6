"""Host input pipeline (tf.data → numpy): augmented training views and padded eval batches.

Training order and randomness are pure functions of `(config.seed, step)`:
- Epoch `e` visits the training examples (the first `config.data.train_subset` when > 0) in a
  permutation seeded by `(seed, e)`; step `t` of the epoch is the global batch at positions
  `[t·G, (t+1)·G)` of it (the remainder is dropped) and process `p` takes rows `[p·b, (p+1)·b)` of
  that batch, `b = G // process_count`.
- View `v` of example `i` in epoch `e` draws its uniforms from the stateless seed `(seed, e, i, v)`
  (`augment.draw`), whatever batch or process it lands in.
So `train_iterator(start_step=s)` yields exactly what `start_step=0` yields after `s` batches.

Two ways to walk the permutation:
- random access (Fashion-MNIST, image folders, tfds sets with `config.data.cache`): position → index
  is `tf.random.experimental.index_shuffle` (a true global shuffle); resuming costs nothing, and the
  global batch does not depend on `process_count`.
- streaming (tfds sets without `cache`, e.g. ImageNet): process `p` reads the contiguous slice
  `[p·N/P, (p+1)·N/P)` of the split (images still encoded), shuffles it with a buffer of
  `config.data.shuffle_buffer` seeded by `(seed, e)` and skips already-seen examples before
  decoding. Resume is exact for the same `process_count` (and the same TF global seed, which
  ssl_jax never sets: `tf.data` mixes it into the shuffle's seed).

Augmentation runs in two stages (`augment.split_point`): small fixed-size sources (≤ 160² pixels:
Fashion-MNIST, CIFAR, STL-10) are batched first and augmented by whole-batch ops; large or
variable-size ones are augmented image by image before batching. With `config.data.device_ops` only
the geometric ops (`augment.HOST_OPS`) run here; `device_augment` runs the rest in the jitted step.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from ssl_jax import configs
from ssl_jax.data import augment, datasets

_SHUFFLE_TAG = 0
_AUGMENT_TAG = 1
_INT64_MAX = np.iinfo(np.int64).max


def _hide_accelerators() -> None:
    """Keep TensorFlow off GPUs (JAX owns them); too late once TF has initialised them, then
    no-op."""
    try:
        tf.config.set_visible_devices([], "GPU")
    except (RuntimeError, ValueError):
        pass


_plain = tf.autograph.experimental.do_not_convert  # map functions are plain graph code


def _fold(seed: tf.Tensor, *data: Any) -> tf.Tensor:
    for d in data:
        seed = tf.random.experimental.stateless_fold_in(seed, tf.cast(d, tf.int64))
    return seed


def _base_seed(config: Any, tag: int) -> tf.Tensor:
    return tf.constant([int(config.seed), tag], tf.int64)


def _subset(config: Any, n: int) -> int:
    """Training examples used: the first `config.data.train_subset` when > 0, else all `n`."""
    subset = int(config.data.get("train_subset", 0) or 0)
    return min(n, subset) if subset > 0 else n


def steps_per_epoch(config: Any) -> int:
    """`num_examples(train_split) // global_batch_size` (epochs drop their remainder), counting only
    the first `config.data.train_subset` examples when it is > 0."""
    n = _subset(config, datasets.num_examples(config.data, config.data.train_split))
    steps = n // int(config.global_batch_size)
    if steps < 1:
        raise ValueError(
            f"config.global_batch_size={config.global_batch_size} is larger than the "
            f"{n} examples of {config.data.name}/{config.data.train_split}."
        )
    return steps


def adapt_channels(image: tf.Tensor, channels: int) -> tf.Tensor:
    """uint8 `[H, W, C]` → `channels` channels: gray copied to 3, RGB to luma (rounded), else as
    is."""
    have = image.shape[-1]
    if have == channels:
        return image
    if have == 1 and channels == 3:
        return tf.tile(image, [1, 1, 3])
    if have == 3 and channels == 1:
        return augment.to_uint8(augment.gray(augment.to_float(image)))
    raise ValueError(f"cannot turn {have}-channel images into {channels} channels.")


def eval_view(image: tf.Tensor, size: int, crop_fraction: float, channels: int) -> tf.Tensor:
    """uint8 → uint8 `[size, size, channels]`: shorter side resized to `round(size / crop_fraction)`
    (skipped when it already has that length, so native-size small images pass through untouched),
    then centre crop."""
    resize_to = round(size / crop_fraction)
    height, width = image.shape[:2]
    seed = tf.zeros([2], tf.int64)
    if height is None or width is None or min(height, width) != resize_to:
        image = augment.resize(image, seed, size=resize_to)
    image = augment.to_uint8(augment.center_crop(image, seed, size=size))
    return adapt_channels(image, channels)


def _recipes(config: Any) -> list[tuple[str, Sequence[Any]]]:
    """`(name, host recipe)` per view, validated; with `config.data.device_ops` only the geometric
    ops (`augment.HOST_OPS`) stay on the host; a `color_space` op (`augment.FLOAT_OPS`) never runs
    here (`device_augment.to_model_input`)."""
    data = config.data
    channels = int(data.channels)
    device_ops = bool(data.get("device_ops", False))
    if configs.device_crop_side(data):
        configs.check_device_crops(data)  # the views are cut on the device: rrc-led recipes only
    out = []
    for name in data.views:
        if name not in data.recipes:
            raise ValueError(
                f"config.data.views names recipe {name!r}, "
                f"not in config.data.recipes {tuple(data.recipes)}."
            )
        recipe = tuple(data.recipes[name])
        augment.validate_recipe(name, recipe, channels)
        if device_ops:
            host_only = [op["op"] for op in recipe if op["op"] in augment.HOST_ONLY_OPS]
            if host_only:
                raise ValueError(
                    f"recipe {name!r}: {host_only[0]} has no device version; "
                    "set config.data.device_ops = False."
                )
            recipe = tuple(op for op in recipe if op["op"] in augment.HOST_OPS)
        # float ops (colour spaces) run on the device: views leave the host as uint8
        recipe = tuple(op for op in recipe if op["op"] not in augment.FLOAT_OPS)
        out.append((name, recipe))
    return out


def _batch_rows(config: Any, process_index: int, process_count: int) -> int:
    global_batch = int(config.global_batch_size)
    if process_count < 1 or not 0 <= process_index < process_count:
        raise ValueError(f"process_index={process_index} / process_count={process_count} invalid.")
    if global_batch % process_count:
        raise ValueError(
            f"config.global_batch_size={global_batch} is not divisible by "
            f"process_count={process_count}."
        )
    return global_batch // process_count


def _to_numpy(ds: tf.data.Dataset) -> Iterator[dict[str, Any]]:
    yield from ds.as_numpy_iterator()


def _pipeline_options() -> tf.data.Options:
    options = tf.data.Options()
    options.deterministic = True
    return options


def train_iterator(
    config: Any,
    *,
    start_step: int = 0,
    process_index: int = 0,
    process_count: int = 1,
    num_parallel_calls: int | None = None,
) -> Iterator[dict[str, Any]]:
    """Endless host-local batches `{'views': (uint8 [b, h_v, w_v, C], ...), 'index': int32 [b],
    'label': int32 [b]}` for step `start_step` onwards; `num_parallel_calls` None = AUTOTUNE."""
    _hide_accelerators()
    data = config.data
    b = _batch_rows(config, process_index, process_count)
    global_batch = int(config.global_batch_size)
    recipes = _recipes(config)
    channels = int(data.channels)
    src = datasets.open_source(data, data.train_split)
    n = _subset(config, src.num_examples)
    spe = n // global_batch
    if spe < 1:
        raise ValueError(
            f"config.global_batch_size={global_batch} exceeds the {n} training examples."
        )
    if start_step < 0:
        raise ValueError(f"start_step={start_step} must be >= 0.")
    shuffle_seed = _base_seed(config, _SHUFFLE_TAG)
    augment_seed = _base_seed(config, _AUGMENT_TAG)
    parallel = tf.data.AUTOTUNE if num_parallel_calls is None else num_parallel_calls

    splits: dict[int, int] = {}

    canvas = configs.device_crop_side(data)

    @_plain
    def views(epoch, ex):
        """Per example: decode, one uniform draw per view, the per-image prefix of each recipe (with
        `data.device_crops`: the image on its canvas and each view's crop box and flip instead)."""
        image = adapt_channels(src.decode(ex["image"]), channels)
        example_seed = _fold(augment_seed, epoch, ex["index"])
        if canvas:
            image, height, width = augment.fit_canvas(image, canvas)
            boxes, flips = [], []
            for v, (_, recipe) in enumerate(recipes):
                u = augment.draw(recipe, _fold(example_seed, v))
                box, flip = augment.crop_and_flip(recipe, u, height, width)
                boxes.append(box)
                flips.append(flip)
            return {
                "canvas": image,
                "boxes": tf.stack(boxes),
                "flips": tf.stack(flips),
                "index": ex["index"],
                "label": ex["label"],
            }
        xs, us = [], []
        for v, (_, recipe) in enumerate(recipes):
            u = augment.draw(recipe, _fold(example_seed, v))
            splits[v] = augment.split_point(recipe, image.shape)
            xs.append(augment.apply_prefix(image, recipe, u, splits[v]))
            us.append(u)
        return {"views": tuple(xs), "u": tuple(us), "index": ex["index"], "label": ex["label"]}

    @_plain
    def finish(batch):
        """Per batch: the rest of each recipe, vectorised over the batch, then uint8."""
        out = tuple(
            augment.apply_ops_uint8(x, recipe, u, splits[v])
            for v, ((_, recipe), x, u) in enumerate(zip(recipes, batch["views"], batch["u"]))
        )
        return {"views": out, "index": batch["index"], "label": batch["label"]}

    if src.lookup is not None:

        @_plain
        def locate(counter):
            step, row = counter // b, counter % b
            epoch = step // spe
            position = (step % spe) * global_batch + process_index * b + row
            index = tf.random.experimental.index_shuffle(
                position, _fold(shuffle_seed, epoch), max_index=n - 1
            )
            return views(epoch, src.lookup(index))

        ds = tf.data.Dataset.range(start_step * b, _INT64_MAX)
        ds = ds.map(locate, num_parallel_calls=parallel, deterministic=True)
    else:
        start = process_index * n // process_count
        end = (process_index + 1) * n // process_count
        stream = src.read(start, end)
        per_epoch = spe * b  # <= end - start since n // P >= spe * G / P
        first_epoch, first_skip = divmod(start_step, spe)
        first_skip *= b
        buffer = int(data.get("shuffle_buffer", 10_000) or 10_000)

        @_plain
        def epoch_stream(epoch):
            seed = tf.random.stateless_uniform(
                [], _fold(shuffle_seed, epoch), minval=None, maxval=None, dtype=tf.int64
            )
            d = stream.shuffle(buffer, seed=seed, reshuffle_each_iteration=False).take(per_epoch)
            d = d.skip(tf.where(epoch == first_epoch, tf.constant(first_skip, tf.int64), 0))
            return d.map(lambda ex: (epoch, ex))

        ds = tf.data.Dataset.range(first_epoch, _INT64_MAX).flat_map(epoch_stream)
        ds = ds.map(views, num_parallel_calls=parallel, deterministic=True)

    for (name, _), spec in zip(recipes, () if canvas else ds.element_spec["views"]):
        if not spec.shape.is_fully_defined():
            raise ValueError(
                f"recipe {name!r} gives views of varying size {spec.shape} on "
                f"{data.name}/{data.train_split}: end it with a random_resized_crop, "
                "center_crop or a resize to an (h, w) pair."
            )
    ds = ds.batch(b, drop_remainder=True)
    if not canvas:  # with canvases the step cuts the views (device_augment.cut_views)
        ds = ds.map(finish, num_parallel_calls=parallel, deterministic=True)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    return _to_numpy(ds.with_options(_pipeline_options()))


def eval_iterator(
    config: Any,
    split: str,
    *,
    batch_size: int,
    process_index: int = 0,
    process_count: int = 1,
) -> Iterator[dict[str, Any]]:
    """One pass over `split`: `{'image': uint8 [b, s, s, C], 'label', 'index': int32 [b],
    'mask': bool [b]}`. Process `p` covers the contiguous slice `[p·N/P, (p+1)·N/P)`; every process
    yields `ceil(ceil(N / P) / batch_size)` batches, padding (mask False, label and index -1) at the
    end."""
    _hide_accelerators()
    if process_count < 1 or not 0 <= process_index < process_count:
        raise ValueError(f"process_index={process_index} / process_count={process_count} invalid.")
    data = config.data
    size = int(data.image_size)
    channels = int(data.channels)
    crop_fraction = float(data.eval_crop_fraction)
    src = datasets.open_source(data, split)
    n = src.num_examples
    start = process_index * n // process_count
    end = (process_index + 1) * n // process_count
    num_batches = math.ceil(math.ceil(n / process_count) / batch_size)

    @_plain
    def prepare(ex):
        image = eval_view(src.decode(ex["image"]), size, crop_fraction, channels)
        return {
            "image": image,
            "label": ex["label"],
            "index": ex["index"],
            "mask": tf.constant(True),
        }

    ds = src.read(start, end).map(prepare, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    padding = {
        "image": tf.zeros([size, size, channels], tf.uint8),
        "label": tf.constant(-1, tf.int32),
        "index": tf.constant(-1, tf.int32),
        "mask": tf.constant(False),
    }
    pad = num_batches * batch_size - (end - start)
    ds = ds.concatenate(tf.data.Dataset.from_tensors(padding).repeat(pad))
    ds = ds.batch(batch_size, drop_remainder=True).prefetch(tf.data.AUTOTUNE)
    return _to_numpy(ds.with_options(_pipeline_options()))
