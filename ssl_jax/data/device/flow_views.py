"""InfoMin's frozen view generator g as a file, and its use as the model's input transform.

`view_learning.learn_views` trains g and writes it with `save_flow`; the device op
`{'op': 'learned_flow', 'path': ...}` (`colour.learned_flow`) reads it with `load_flow` and
applies it with `apply_flow`.
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import traverse_util

from ssl_jax.data.device.color_spaces import convert
from ssl_jax.models.flow import PixelFlow


class FlowViews(NamedTuple):
    """A frozen g: module, params, input space (`base`) and the mean/std of its output channels."""

    flow: PixelFlow
    params: Any
    base: str
    in_mean: tuple[float, ...]
    in_std: tuple[float, ...]
    out_mean: tuple[float, ...]
    out_std: tuple[float, ...]


def to_base(rgb: jnp.ndarray, base: str, mean, std) -> jnp.ndarray:
    """float RGB in [0, 1] → g's input: standardised RGB (`mean`/`std`) or a normalised colour
    space."""
    if base == "rgb":
        return (rgb - jnp.asarray(mean, jnp.float32)) / jnp.asarray(std, jnp.float32)
    return convert(rgb, base)


def apply_flow(views: FlowViews, rgb: jnp.ndarray) -> jnp.ndarray:
    """float RGB `[..., 3]` in [0, 1] → g(X) standardised per channel: the model's input."""
    y = views.flow.apply(views.params, to_base(rgb, views.base, views.in_mean, views.in_std))
    return (y - jnp.asarray(views.out_mean, jnp.float32)) / jnp.asarray(views.out_std, jnp.float32)


def save_flow(path: str, views: FlowViews) -> str:
    """`views` as one `.npz` (parameters by '/'-joined path, the rest as JSON), written atomically."""
    flat = traverse_util.flatten_dict(jax.device_get(views.params), sep="/")
    meta = dict(
        num_blocks=views.flow.num_blocks,
        hidden=list(views.flow.hidden),
        volume_preserving=views.flow.volume_preserving,
        scale_bound=views.flow.scale_bound,
        base=views.base,
        in_mean=list(views.in_mean),
        in_std=list(views.in_std),
        out_mean=list(views.out_mean),
        out_std=list(views.out_std),
    )
    tmp = path + ".tmp.npz"
    np.savez(tmp, __meta__=json.dumps(meta), **{k: np.asarray(v) for k, v in flat.items()})
    os.replace(tmp, path)
    return path


@functools.lru_cache(maxsize=8)
def load_flow(path: str) -> FlowViews:
    """The `FlowViews` that `save_flow` wrote at `path` (cached); clear errors for a missing or
    foreign file."""
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"learned_flow: no view generator at {path!r} (write one with "
            "`python -m ssl_jax.view_learning`)"
        )
    with np.load(path) as z:
        if "__meta__" not in z:
            raise ValueError(f"learned_flow: {path!r} is not a file of flow_views.save_flow")
        meta = json.loads(str(z["__meta__"]))
        params = traverse_util.unflatten_dict(
            {k: np.asarray(z[k]) for k in z.files if k != "__meta__"}, sep="/"
        )
    flow = PixelFlow(
        num_blocks=meta["num_blocks"],
        hidden=tuple(meta["hidden"]),
        volume_preserving=meta["volume_preserving"],
        scale_bound=meta["scale_bound"],
    )
    return FlowViews(
        flow,
        params,
        meta["base"],
        tuple(meta["in_mean"]),
        tuple(meta["in_std"]),
        tuple(meta["out_mean"]),
        tuple(meta["out_std"]),
    )
