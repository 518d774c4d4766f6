"""The train split as a run reads it: how many rows (`num_train`, the `data.train_subset` clip), how
many steps make an epoch, how many rows of a global batch each process feeds, and its pixels in the
run's channel count. The loop, both input pipelines and the linear probe ask here, so they agree.

The epoch rule: an epoch is `num_train // global_batch_size` steps, its remainder dropped; a split
smaller than one batch has no epoch, and `steps_per_epoch` raises `ConfigError` (the pipelines cut
no batch from it; a run checks it before anything compiles, `TrainInput.prepare`). Only the schedules, built with the experiment before any batch is read, count such a split as
one step per epoch (`schedule_steps_per_epoch`), so a config can be built and checked anyway.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from ssl_jax.config_checks import ConfigError
from ssl_jax.data import datasets, recipe_ops


def clip_to_subset(data_config: Any, n: int) -> int:
    """Rows of an `n`-row train split the run uses: the first `data.train_subset` when > 0."""
    subset = int(data_config.get("train_subset", 0) or 0)
    return min(n, subset) if subset > 0 else n


def num_train(config: Any) -> int:
    """Rows of the train split the run uses (`datasets.num_examples`, clipped to the subset); no
    pixel is read."""
    data = config.data
    return clip_to_subset(data, datasets.num_examples(data, data.train_split))


def steps_per_epoch(config: Any, num_rows: int | None = None) -> int:
    """`num_rows // global_batch_size` (the module's epoch rule), `num_rows` = `num_train(config)`
    when not given; `ConfigError` (a ValueError) when one batch is larger than the split."""
    n = num_train(config) if num_rows is None else int(num_rows)
    global_batch = int(config.global_batch_size)
    if n < global_batch:
        raise ConfigError(
            f"config.global_batch_size={global_batch} exceeds the {n} training examples: one "
            f"batch is larger than the split; allowed: at most {n}, or more training examples "
            "(config.data.train_subset, config.data.train_split)."
        )
    return n // global_batch


def schedule_steps_per_epoch(config: Any, num_rows: int) -> int:
    """Steps per epoch for the learning-rate and EMA schedules: `num_rows // global_batch_size`, at
    least 1 (the module's epoch rule, relaxed for building only)."""
    return max(1, int(num_rows) // int(config.global_batch_size))


def batch_rows(config: Any, process_index: int, process_count: int) -> int:
    """Rows of the global batch one process feeds (`global_batch_size / process_count`), after
    checking the process index and the divisibility."""
    global_batch = int(config.global_batch_size)
    if process_count < 1 or not 0 <= process_index < process_count:
        raise ValueError(f"process_index={process_index} / process_count={process_count} invalid.")
    if global_batch % process_count:
        raise ValueError(
            f"config.global_batch_size={global_batch} is not divisible by "
            f"process_count={process_count}."
        )
    return global_batch // process_count


def adapt_channels(images, channels: int, xp=jnp):
    """uint8 `[..., H, W, C]` → `channels` channels: grey copied to 3, RGB to its luma, else as is.
    `xp` = `jnp` (in the step) or `np` (host batches): the same float32 products summed in the same
    order as `host/tensors.gray(to_float(x))`, ×255, clipped, rounded half to even, so both equal the
    TensorFlow op (`pipeline.adapt_channels`) bit for bit."""
    have = images.shape[-1]
    if have == channels:
        return images
    if have == 1 and channels == 3:
        return xp.repeat(images, 3, axis=-1)
    if have == 3 and channels == 1:
        f32 = xp.float32
        x = images.astype(f32) * f32(1.0 / 255.0)
        w = [f32(c) for c in recipe_ops.LUMA]
        luma = x[..., 0:1] * w[0] + x[..., 1:2] * w[1] + x[..., 2:3] * w[2]
        return xp.round(xp.clip(luma * f32(255.0), 0.0, 255.0)).astype(xp.uint8)
    raise ValueError(f"cannot turn {have}-channel images into {channels} channels.")
