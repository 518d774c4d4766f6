"""Host input pipeline (tf.data → numpy): augmented training views and padded eval batches.

Training order and randomness are pure functions of `(config.seed, step)`:
- Epoch `e` visits the training examples (the first `config.data.train_subset` when > 0) in a
  permutation seeded by `(seed, e)`; step `t` of the epoch is the global batch at positions
  `[t·G, (t+1)·G)` of it (the remainder is dropped) and process `p` takes rows `[p·b, (p+1)·b)` of
  that batch, `b = G // process_count`.
- View `v` of example `i` in epoch `e` draws its uniforms from the stateless seed `(seed, e, i, v)`
  (`host/augment.draw`), whatever batch or process it lands in; a source that composes each view
  (`Source.compose`: color_fashion_mnist's `views='item'`) draws the view's image from another
  stream of the same `(seed, e, i, v)`.
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

Augmentation runs in two stages (`host/augment.split_point`): small fixed-size sources (≤ 160²
pixels: Fashion-MNIST, CIFAR, STL-10) are batched first and augmented by whole-batch ops; large or
variable-size ones are augmented image by image before batching. With `config.data.device_ops`
only the geometric ops (`recipe_ops.HOST_OPS`) run here; `device/recipe` runs the rest in the step.

TensorFlow is imported on first use of tf.data, never at import: `eval_iterator` of a numpy-held
set (`datasets.NUMPY_NAMES`) at its native size takes a numpy path with the same batches, and
`device_train_iterator` draws training views as `config.data.pipeline = 'device'` does (pictures,
view learning); neither imports TensorFlow.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ssl_jax.data import datasets, device_pipeline, recipe_ops, train_split
from ssl_jax.data.device import recipe as device_recipe
from ssl_jax.data.device.checks import check_device_crops, device_crop_side

if TYPE_CHECKING:
    import tensorflow as tf

_SHUFFLE_TAG = 0
_AUGMENT_TAG = 1
_COMPOSE_TAG = 2
_INT64_MAX = np.iinfo(np.int64).max


def _hide_accelerators() -> None:
    """Keep TensorFlow off GPUs (JAX owns them); too late once TF has initialised them, then
    no-op."""
    import tensorflow as tf

    try:
        tf.config.set_visible_devices([], "GPU")
    except (RuntimeError, ValueError):
        pass


def _plain(fn):
    """tf.data map functions are plain graph code: no autograph conversion."""
    import tensorflow as tf

    return tf.autograph.experimental.do_not_convert(fn)


def _fold(seed: tf.Tensor, *data: Any) -> tf.Tensor:
    import tensorflow as tf

    for d in data:
        seed = tf.random.experimental.stateless_fold_in(seed, tf.cast(d, tf.int64))
    return seed


def _base_seed(config: Any, tag: int) -> tf.Tensor:
    import tensorflow as tf

    return tf.constant([int(config.seed), tag], tf.int64)


def adapt_channels(image: tf.Tensor | np.ndarray, channels: int) -> tf.Tensor | np.ndarray:
    """uint8 `[H, W, C]` → `channels` channels: gray copied to 3, RGB to luma (rounded), else as
    is. A numpy array (any leading dims) gives the same pixels without TensorFlow."""
    have = image.shape[-1]
    if have == channels:
        return image
    if isinstance(image, np.ndarray):
        return train_split.adapt_channels(image, channels, xp=np)
    import tensorflow as tf

    from ssl_jax.data.host import tensors

    if have == 1 and channels == 3:
        return tf.tile(image, [1, 1, 3])
    if have == 3 and channels == 1:
        return tensors.to_uint8(tensors.gray(tensors.to_float(image)))
    raise ValueError(f"cannot turn {have}-channel images into {channels} channels.")


def _eval_resize_to(size: int, crop_fraction: float) -> int:
    """Shorter side of an eval image before its centre crop."""
    return round(size / crop_fraction)


def eval_view(image: tf.Tensor, size: int, crop_fraction: float, channels: int) -> tf.Tensor:
    """uint8 → uint8 `[size, size, channels]`: shorter side resized to `round(size / crop_fraction)`
    (skipped when it already has that length, so native-size small images pass through untouched),
    then centre crop."""
    import tensorflow as tf

    from ssl_jax.data.host import augment, tensors

    resize_to = _eval_resize_to(size, crop_fraction)
    height, width = image.shape[:2]
    seed = tf.zeros([2], tf.int64)
    if height is None or width is None or min(height, width) != resize_to:
        image = augment.resize(image, seed, size=resize_to)
    image = tensors.to_uint8(augment.center_crop(image, seed, size=size))
    return adapt_channels(image, channels)


def _eval_view_numpy(images: np.ndarray, size: int, channels: int) -> np.ndarray:
    """`eval_view` of uint8 `[N, H, W, C]` images that need no resize: the centre crop (zero
    padding where the crop is larger, `round((H - size) / 2)` offsets, as `augment.center_crop`)
    and `adapt_channels`."""
    height, width = images.shape[1:3]
    pad_h, pad_w = max(size - height, 0), max(size - width, 0)
    if pad_h or pad_w:
        pads = ((0, 0), (pad_h // 2, (pad_h + 1) // 2), (pad_w // 2, (pad_w + 1) // 2), (0, 0))
        images = np.pad(images, pads)
    top = round((height + pad_h - size) / 2)
    left = round((width + pad_w - size) / 2)
    return adapt_channels(images[:, top : top + size, left : left + size], channels)


def _recipes(config: Any) -> list[tuple[str, Sequence[Any]]]:
    """`(name, host recipe)` per view, validated; with `config.data.device_ops` only the geometric
    ops (`recipe_ops.HOST_OPS`) stay on the host; a `color_space` op (`recipe_ops.FLOAT_OPS`) never
    runs here (`device/recipe.to_model_input`)."""
    data = config.data
    channels = int(data.channels)
    device_ops = bool(data.get("device_ops", False))
    if device_crop_side(data):
        check_device_crops(data)  # the views are cut on the device: rrc-led recipes only
    out = []
    for name in data.views:
        if name not in data.recipes:
            raise ValueError(
                f"config.data.views names recipe {name!r}, "
                f"not in config.data.recipes {tuple(data.recipes)}."
            )
        recipe = tuple(data.recipes[name])
        recipe_ops.validate_recipe(name, recipe, channels)
        if device_ops:
            host_only = [op["op"] for op in recipe if op["op"] in recipe_ops.HOST_ONLY_OPS]
            if host_only:
                raise ValueError(
                    f"recipe {name!r}: {host_only[0]} has no device version; "
                    "set config.data.device_ops = False."
                )
            recipe = tuple(op for op in recipe if op["op"] in recipe_ops.HOST_OPS)
        # float ops (colour spaces) run on the device: views leave the host as uint8
        recipe = tuple(op for op in recipe if op["op"] not in recipe_ops.FLOAT_OPS)
        out.append((name, recipe))
    return out


def _to_numpy(ds: tf.data.Dataset) -> Iterator[dict[str, Any]]:
    """`ds`'s elements as numpy. The iterator, once closed or exhausted, is released on a thread
    of its own: on a busy host TensorFlow's release of an autotuned iterator can wait out its
    autotune thread's sleep (seconds, longer the longer it ran; docs/performance.md, "Releasing a
    tf.data iterator"), which the caller (the train loop after an evaluation) need not wait for.
    The thread is not a daemon: a process still ends after the release."""
    iterator = ds.as_numpy_iterator()
    try:
        yield from iterator
    finally:
        release = [iterator]
        del iterator
        try:
            threading.Thread(target=release.clear, name="tf.data release").start()
        except RuntimeError:  # the interpreter is shutting down (no new threads): release here
            release.clear()


def _pipeline_options() -> tf.data.Options:
    import tensorflow as tf

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
    import tensorflow as tf

    from ssl_jax.data.host import augment, geometry

    _hide_accelerators()
    data = config.data
    b = train_split.batch_rows(config, process_index, process_count)
    global_batch = int(config.global_batch_size)
    recipes = _recipes(config)
    channels = int(data.channels)
    src = datasets.train_source(data)
    n = train_split.clip_to_subset(data, src.num_examples)
    spe = train_split.steps_per_epoch(config, n)
    if start_step < 0:
        raise ValueError(f"start_step={start_step} must be >= 0.")
    shuffle_seed = _base_seed(config, _SHUFFLE_TAG)
    augment_seed = _base_seed(config, _AUGMENT_TAG)
    compose_seed = _base_seed(config, _COMPOSE_TAG)
    parallel = tf.data.AUTOTUNE if num_parallel_calls is None else num_parallel_calls

    splits: dict[int, int] = {}

    canvas = device_crop_side(data)

    @_plain
    def views(epoch, ex):
        """Per example: decode, one uniform draw per view, the per-image prefix of each recipe (with
        `data.device_crops`: the image on its canvas and each view's crop box and flip instead;
        with `src.compose`: each view's own image first)."""
        image = src.decode(ex["image"])
        if src.compose is None:
            image = adapt_channels(image, channels)
        example_seed = _fold(augment_seed, epoch, ex["index"])
        if canvas:
            image, height, width = geometry.fit_canvas(image, canvas)
            boxes, flips = [], []
            for v, (_, recipe) in enumerate(recipes):
                u = augment.draw(recipe, _fold(example_seed, v))
                box, flip = geometry.crop_and_flip(recipe, u, height, width)
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
            x = image
            if src.compose is not None:
                seed = _fold(compose_seed, epoch, ex["index"], v)
                x = adapt_channels(src.compose(image, seed), channels)
            u = augment.draw(recipe, _fold(example_seed, v))
            splits[v] = augment.split_point(recipe, x.shape)
            xs.append(augment.apply_prefix(x, recipe, u, splits[v]))
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
    if not canvas:  # with canvases the step cuts the views (device/canvas.cut_views)
        ds = ds.map(finish, num_parallel_calls=parallel, deterministic=True)
    ds = ds.prefetch(tf.data.AUTOTUNE)
    return _to_numpy(ds.with_options(_pipeline_options()))


def device_train_iterator(
    config: Any, *, start_step: int = 0, process_index: int = 0, process_count: int = 1
) -> Iterator[dict[str, Any]]:
    """`train_iterator`'s batches as `config.data.pipeline = 'device'` draws them, without
    TensorFlow: the split of `datasets.load_arrays` (its first `data.train_subset` rows when > 0)
    in `device_pipeline.index_batches`' order, every view's whole recipe on the device
    (`device/recipe.recipe_view`, uniforms from `(seed, step, view)`), uint8 views before a trailing
    normalising op. For pictures and view learning: the train step draws its own views."""
    import jax

    data = config.data
    bad = device_pipeline.unsupported_ops(data)
    if bad:
        raise ValueError(f"recipe {bad[0][0]!r} op {bad[0][1]!r} has no device version.")
    recipes = tuple(tuple(dict(op) for op in data.recipes[v]) for v in data.views)
    for name, recipe in zip(data.views, recipes):
        recipe_ops.validate_recipe(name, recipe, int(data.channels))
    images, labels = datasets.load_arrays(data, data.train_split)
    n = train_split.num_train(config)
    key = jax.random.PRNGKey(int(config.seed))

    @jax.jit
    def views(rows, step):
        step_key = jax.random.fold_in(jax.random.fold_in(key, _AUGMENT_TAG), step)
        return device_recipe.uint8_views(rows, recipes, step_key)

    batches = device_pipeline.index_batches(
        config,
        labels[:n],
        start_step=start_step,
        process_index=process_index,
        process_count=process_count,
    )

    def generate():
        for step, batch in enumerate(batches, start_step):
            rows = adapt_channels(images[batch["index"]], int(data.channels))
            yield {"views": tuple(np.asarray(x) for x in views(rows, step)), **batch}

    return generate()


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
    end. A numpy-held set (`datasets.NUMPY_NAMES`) whose images need no resize is cut in numpy
    (the same batches, no TensorFlow); any other through tf.data."""
    if process_count < 1 or not 0 <= process_index < process_count:
        raise ValueError(f"process_index={process_index} / process_count={process_count} invalid.")
    data = config.data
    size = int(data.image_size)
    channels = int(data.channels)
    crop_fraction = float(data.eval_crop_fraction)
    if data.name in datasets.NUMPY_NAMES:
        images, labels = datasets.load_arrays(data, split)
        if min(images.shape[1:3]) == _eval_resize_to(size, crop_fraction):
            rows = _eval_rows(len(labels), batch_size, process_index, process_count)
            return _numpy_eval_batches(images, labels, size, channels, batch_size, *rows)
    return _tfdata_eval_batches(
        config, split, batch_size, process_index, process_count, size, crop_fraction, channels
    )


def _eval_rows(n: int, batch_size: int, process_index: int, process_count: int):
    """`(start, end, num_batches)` of process `process_index`'s slice of an `n`-example split."""
    start = process_index * n // process_count
    end = (process_index + 1) * n // process_count
    return start, end, math.ceil(math.ceil(n / process_count) / batch_size)


def _numpy_eval_batches(
    images: np.ndarray,
    labels: np.ndarray,
    size: int,
    channels: int,
    batch_size: int,
    start: int,
    end: int,
    num_batches: int,
) -> Iterator[dict[str, Any]]:
    """`eval_iterator`'s batches of rows `[start, end)` of in-memory uint8 images at native size."""
    for b in range(num_batches):
        lo = min(start + b * batch_size, end)
        hi = min(lo + batch_size, end)
        valid = hi - lo
        image = np.zeros((batch_size, size, size, channels), np.uint8)
        image[:valid] = _eval_view_numpy(images[lo:hi], size, channels)
        label = np.full(batch_size, -1, np.int32)
        label[:valid] = labels[lo:hi]
        index = np.full(batch_size, -1, np.int32)
        index[:valid] = np.arange(lo, hi)
        yield {
            "image": image,
            "label": label,
            "index": index,
            "mask": np.arange(batch_size) < valid,
        }


def _tfdata_eval_batches(
    config: Any,
    split: str,
    batch_size: int,
    process_index: int,
    process_count: int,
    size: int,
    crop_fraction: float,
    channels: int,
) -> Iterator[dict[str, Any]]:
    """`eval_iterator` through tf.data: decode, `eval_view`, pad, batch."""
    import tensorflow as tf

    _hide_accelerators()
    src = datasets.open_source(config.data, split)
    start, end, num_batches = _eval_rows(src.num_examples, batch_size, process_index, process_count)

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
