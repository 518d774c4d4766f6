"""One split of one data set as every back-end hands it over: `Source`, the random-access source of
arrays held in memory (`array_source`), and how the back-ends read `config.data` (`config_get`,
`cache_key`).

A leaf of `ssl_jax.data`: it imports nothing of the package, and TensorFlow only inside
`array_source`, so the back-ends import it at module level.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import tensorflow as tf


@dataclasses.dataclass(frozen=True)
class Source:
    """One split of one dataset.

    `read(start, end)` yields `{'image', 'label': int32, 'index': int32}` for positions `[start,
    end)` in the split's fixed order, where `image` is whatever `decode` turns into uint8 `[H, W,
    C]` (a string of encoded bytes, or the pixels already). `lookup(index)` (a tf function of an
    int64 scalar) returns the same dict for one position, or is None when the split can only be
    streamed. `compose(image, seed)`, when not None, makes one training view's image from the
    decoded one with the view's own stateless seed (`color_fashion_mnist`'s item views: `image` is
    the item); None: every view is cut from the image itself.
    """

    name: str
    split: str
    num_examples: int
    has_labels: bool
    channels: int
    read: Callable[[int, int], tf.data.Dataset]
    decode: Callable[[tf.Tensor], tf.Tensor]
    lookup: Callable[[tf.Tensor], dict[str, tf.Tensor]] | None
    compose: Callable[[tf.Tensor, tf.Tensor], tf.Tensor] | None = None


def config_get(data_config: Any, key: str, default: Any) -> Any:
    """`data_config.key` (ConfigDict, dict or any object), `default` when absent or None."""
    if hasattr(data_config, "get"):
        value = data_config.get(key, default)
    else:
        value = getattr(data_config, key, default)
    return default if value is None else value


def cache_key(data_config: Any, split: str) -> tuple:
    """What names a split's pixels for the caches of whole splits in memory."""
    return (
        data_config.name,
        config_get(data_config, "data_dir", ""),
        config_get(data_config, "manual_dir", ""),
        split,
    )


def array_source(
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
