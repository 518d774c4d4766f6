"""The host ops' tensor helpers (TensorFlow): uint8 ↔ float, luma, static-or-dynamic sizes, and
how a batch op applies a per-example choice (`apply_where`, `partitioned`).

A static batch of one takes `tf.cond` / `tf.switch_case` branches, so ops that are not drawn cost
nothing; a larger batch partitions it by the ops each example drew.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from ssl_jax.data.recipe_ops import LUMA


def to_float(images: tf.Tensor) -> tf.Tensor:
    """uint8 → float32 in [0, 1]; float32 unchanged."""
    if images.dtype == tf.uint8:
        return tf.cast(images, tf.float32) * (1.0 / 255.0)
    return tf.cast(images, tf.float32)


def to_uint8(images: tf.Tensor) -> tf.Tensor:
    """float32 in [0, 1] → uint8 (×255, clipped, rounded); uint8 unchanged."""
    if images.dtype == tf.uint8:
        return images
    return tf.cast(tf.round(tf.clip_by_value(images * 255.0, 0.0, 255.0)), tf.uint8)


def dims(x: tf.Tensor, axes: Sequence[int]) -> tuple[Any, ...]:
    """Sizes of `axes`: Python ints when static, scalar tensors otherwise."""
    dynamic = tf.shape(x)
    return tuple(x.shape[a] if x.shape[a] is not None else dynamic[a] for a in axes)


def lerp(u: tf.Tensor, lo: float, hi: float) -> tf.Tensor:
    """`lo + (hi − lo)·u`."""
    return lo + (hi - lo) * u


def gray(images: tf.Tensor) -> tf.Tensor:
    """ITU-R 601-2 luma of float `[..., C]` as `[..., 1]`; the image itself when C is 1."""
    if images.shape[-1] == 1:
        return images
    r, g, b = images[..., 0:1], images[..., 1:2], images[..., 2:3]
    return r * LUMA[0] + g * LUMA[1] + b * LUMA[2]


def needs_colour(images: tf.Tensor, what: str) -> None:
    """ValueError unless `images` have 3 channels."""
    if images.shape[-1] != 3:
        raise ValueError(f"{what} needs 3-channel images, got shape {images.shape}.")


def bcast(v: tf.Tensor) -> tf.Tensor:
    """Per-example `[N]` → `[N, 1, 1, 1]`."""
    return tf.reshape(v, [-1, 1, 1, 1])


def apply_where(mask: tf.Tensor, fn: Callable[[tf.Tensor], tf.Tensor], x: tf.Tensor) -> tf.Tensor:
    """`fn(x[n])` where `mask[n]`, else `x[n]`; one image (static batch of 1) takes a `tf.cond`."""
    if x.shape[0] == 1:
        return tf.ensure_shape(tf.cond(mask[0], lambda: fn(x), lambda: x), x.shape)
    return tf.where(bcast(mask), fn(x), x)


def partitioned(
    x: tf.Tensor, group: tf.Tensor, fns: Sequence[Callable[[tf.Tensor, tf.Tensor], tf.Tensor]]
) -> tf.Tensor:
    """Example n gets `fns[group[n]](x[n], its row index)`; group == len(fns) leaves it unchanged.

    Each fn sees only its own examples (so an op not drawn costs nothing and leaves pixels
    bit-exact). A single image (static batch of 1) takes a `tf.switch_case` instead: no copies.
    """
    n = len(fns)
    if x.shape[0] == 1:
        rows = tf.zeros([1], tf.int32)
        branches = [lambda fn=fn: fn(x, rows) for fn in fns] + [lambda: x]
        return tf.ensure_shape(tf.switch_case(group[0], branches), x.shape)
    rows = tf.range(tf.shape(x)[0])
    parts = tf.dynamic_partition(x, group, n + 1)
    part_rows = tf.dynamic_partition(rows, group, n + 1)
    outs = [fn(parts[k], part_rows[k]) for k, fn in enumerate(fns)] + [parts[n]]
    return tf.ensure_shape(tf.dynamic_stitch(part_rows, outs), x.shape)
