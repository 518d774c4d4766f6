"""`data.device_crops` on the accelerator: every view's `random_resized_crop` and flips cut in the
step from the canvases the host decoded once (`host/geometry.fit_canvas`, `crop_and_flip`).
"""

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from ssl_jax.data.device.geometry import resample


def cut_views(
    canvas: jnp.ndarray,
    boxes: jnp.ndarray,
    flips: jnp.ndarray,
    recipes: Sequence[Sequence[Mapping[str, Any]]],
) -> tuple[jnp.ndarray, ...]:
    """`data.device_crops`: every view's `random_resized_crop` and flips, cut on the device from the
    images the host decoded once (`host/geometry.fit_canvas`, `crop_and_flip`).

    Args:
      canvas: uint8 `[N, S, S, C]`, each image at the top left of its canvas.
      boxes: int32 `[N, V, 4]`, each view's crop `(top, left, height, width)` in canvas pixels.
      flips: bool `[N, V]`, whether each view is mirrored.
      recipes: each view's recipe; its leading `random_resized_crop` gives the size and antialias.

    Returns:
      V uint8 views `[N, h_v, w_v, C]`: the host's views (`host/augment.apply_recipe` of the
      geometric ops) up to the rounding of the separable resize (a grey level at most).
    """
    geometry = []
    for recipe in recipes:
        size = recipe[0]["size"]
        out_hw = (size, size) if isinstance(size, int) else tuple(size)
        geometry.append((*map(int, out_hw), bool(recipe[0].get("antialias", True))))
    return _cut(canvas, boxes, flips, tuple(geometry))


@functools.partial(jax.jit, static_argnums=3)
def _cut(canvas, boxes, flips, geometry: tuple[tuple[int, int, bool], ...]):
    """`cut_views` for each view's `(out_h, out_w, antialias)`; jitted, so a call outside a step
    (view learning, view studies, pictures) runs as one program, not op by op."""
    x = canvas.astype(jnp.float32)
    out = []
    for v, (out_h, out_w, antialias) in enumerate(geometry):
        box = (boxes[:, v, k] for k in range(4))
        y = resample(x, *box, (out_h, out_w), antialias)
        y = jnp.round(jnp.clip(y, 0.0, 255.0)).astype(jnp.uint8)
        out.append(jnp.where(flips[:, v, None, None, None], y[:, :, ::-1], y))
    return tuple(out)


def batch_views(data_config, batch: Mapping[str, Any]) -> tuple[jnp.ndarray, ...]:
    """The uint8 views of a pipeline batch: the host's, or (`data.device_crops`) cut here from its
    canvases with each view's recipe."""
    if "views" in batch:
        return tuple(batch["views"])
    recipes = tuple(tuple(dict(op) for op in data_config.recipes[v]) for v in data_config.views)
    return cut_views(batch["canvas"], batch["boxes"], batch["flips"], recipes)
