"""A recipe on the accelerator, inside the jitted step (jnp only): uint8 views → model input.

- `apply_recipe` (`data.device_ops`): the colour ops of a recipe (`colour.DEVICE_OPS`, each drawn
  from its own key), the host having run the geometry, then `normalize`;
- `recipe_view` / `device_views` (`data.pipeline = 'device'`): the whole recipe (`RECIPE_OPS`) on
  the host's uniforms, so a view is the host's view for the same `u`;
- `to_model_input` / `model_views`: what the step feeds the model from the host's views.

A trailing `color_space` / `learned_flow` op (`recipe_ops.FLOAT_OPS`) replaces the normalisation.
"""

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from ssl_jax.data import recipe_ops
from ssl_jax.data.device import colour, geometry, randaugment
from ssl_jax.data.device.colour import DEVICE_OPS
from ssl_jax.data.recipe_ops import FLOAT_OPS, HOST_OPS


def _standardize(x: jnp.ndarray, mean: Sequence[float], std: Sequence[float], dtype) -> jnp.ndarray:
    x = (x - jnp.asarray(mean, jnp.float32)) / jnp.asarray(std, jnp.float32)
    return x.astype(dtype)


def normalize(
    images: jnp.ndarray, mean: Sequence[float], std: Sequence[float], dtype=jnp.float32
) -> jnp.ndarray:
    """uint8 `[N, H, W, C]` → `(x/255 − mean)/std` in `dtype`; mean/std in [0, 1] pixel units."""
    return _standardize(images.astype(jnp.float32) / 255.0, mean, std, dtype)


def _op_params(index: int, op: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """Op dict (or ConfigDict) → (name, keyword arguments); unknown ops/keys raise ValueError."""
    name = op.get("op", None)
    if name not in DEVICE_OPS and name not in HOST_OPS:
        raise ValueError(
            f"recipe op {index}: unknown op {name!r}; allowed: {tuple(DEVICE_OPS) + HOST_OPS}."
        )
    params = recipe_ops.op_kwargs(op)
    if name in DEVICE_OPS:
        signature = inspect.signature(DEVICE_OPS[name]).parameters
        allowed = set(signature) - {"images", "rng"}
        required = {k for k in allowed if signature[k].default is inspect.Parameter.empty}
        unknown, missing = set(params) - allowed, required - set(params)
        if unknown or missing:
            raise ValueError(
                f"recipe op {index} ({name}): unknown keys {sorted(unknown)}, "
                f"missing keys {sorted(missing)}; allowed {sorted(allowed)}."
            )
    return name, params


def apply_recipe(
    images: jnp.ndarray,
    ops: Sequence[Mapping[str, Any]],
    rng: jax.Array,
    mean: Sequence[float],
    std: Sequence[float],
    dtype=jnp.float32,
) -> jnp.ndarray:
    """The colour ops of a recipe, in recipe order, then `normalize` (unless the recipe ends with
    a `color_space` op, whose own normalisation replaces `mean` / `std`).

    Geometric ops (`HOST_OPS`: crops, resize, flips) are skipped: they already ran on the host. Op
    `k` draws from `fold_in(rng, k)` (`k` = its index in the recipe).

    Args:
      images: uint8 `[N, H, W, C]` host crops.
      ops: the recipe, a tuple of op dicts such as
        `{'op': 'color_jitter', 'p': 0.8, 'brightness': 0.4, ...}`, `{'op': 'grayscale', 'p': 0.2}`,
        `{'op': 'gaussian_blur', 'p': 0.5, 'sigma': (0.1, 2.0), 'kernel_size': 23}`,
        `{'op': 'solarize', 'p': 0.2, 'threshold': 0.5}`.
      rng: key for this view's batch.
      mean, std: per channel, [0, 1] pixel units.
      dtype: output dtype.

    Returns:
      normalised `[N, H, W, C]` in `dtype`.
    """
    x = images.astype(jnp.float32) / 255.0
    normalized = False
    for k, op in enumerate(ops):
        name, params = _op_params(k, op)
        if name in DEVICE_OPS:
            x = DEVICE_OPS[name](x, jax.random.fold_in(rng, k), **params)
            normalized = name in FLOAT_OPS
    return x.astype(dtype) if normalized else _standardize(x, mean, std, dtype)


def to_model_input(
    images: jnp.ndarray,
    ops: Sequence[Mapping[str, Any]],
    mean: Sequence[float],
    std: Sequence[float],
    dtype=jnp.float32,
) -> jnp.ndarray:
    """uint8 views whose recipe `ops` already ran on the host → model input: the recipe's trailing
    `color_space` op when it has one (`[N, H, W, 3]` in that space, normalised), else `normalize`
    with `mean` / `std`."""
    if ops and ops[-1]["op"] in FLOAT_OPS:
        return apply_recipe(images, ops[-1:], jax.random.PRNGKey(0), mean, std, dtype)
    return normalize(images, mean, std, dtype)


def model_views(
    views: Sequence[jnp.ndarray],
    recipes: Sequence[Sequence[Mapping[str, Any]]],
    rng: jax.Array,
    mean: Sequence[float],
    std: Sequence[float],
    dtype,
    *,
    colour_ops: bool,
) -> tuple[jnp.ndarray, ...]:
    """uint8 views `[N, h_v, w_v, C]` that the host cropped (or `canvas.cut_views` cut) → model input
    in `dtype`: with `colour_ops` the colour ops of view `v`'s recipe run here with key
    `fold_in(rng, v)` (`apply_recipe`); without, the host ran them and only a trailing
    `color_space` op or the normalisation runs (`to_model_input`)."""
    if colour_ops:
        return tuple(
            apply_recipe(x, recipe, jax.random.fold_in(rng, v), mean, std, dtype)
            for v, (x, recipe) in enumerate(zip(views, recipes))
        )
    return tuple(to_model_input(x, recipe, mean, std, dtype) for x, recipe in zip(views, recipes))


# op → `fn(x float [N, H, W, C] in [0, 1], u [N, op_draws(op)], **params)`, in the op table's order
RECIPE_OPS: dict[str, Callable[..., jnp.ndarray]] = recipe_ops.in_table_order(
    {**geometry.UNIFORM_OPS, **colour.UNIFORM_OPS, "rand_augment": randaugment.rand_augment}
)


def recipe_view(
    images: jnp.ndarray, recipe: Sequence[Mapping[str, Any]], u: jnp.ndarray
) -> jnp.ndarray:
    """uint8 `[N, H, W, C]` source images → uint8 `[N, h, w, C]` views: every op of `recipe` but a
    trailing normalising one (`color_space`, `learned_flow`: `to_model_input` runs it), in recipe
    order on float pixels, quantised once at the end — what the host pipeline hands over for the
    same `u [N, recipe_ops.num_draws(recipe)]`."""
    x = images.astype(jnp.float32) / 255.0
    offset = 0
    for k, op in enumerate(recipe):
        name, params = op["op"], recipe_ops.op_kwargs(op)
        width = recipe_ops.op_draws(op)
        if name in FLOAT_OPS:
            if k != len(recipe) - 1:
                raise ValueError(f"recipe op {k} ({name}) must be the recipe's last op.")
        elif name in RECIPE_OPS:
            x = RECIPE_OPS[name](x, u[:, offset : offset + width], **params)
        else:
            raise ValueError(
                f"recipe op {k}: {name!r} has no device version ({tuple(RECIPE_OPS)})."
            )
        offset += width
    return jnp.round(jnp.clip(x * 255.0, 0.0, 255.0)).astype(jnp.uint8)


def uint8_views(
    images: jnp.ndarray, recipes: Sequence[Sequence[Mapping[str, Any]]], rng: jax.Array
) -> tuple[jnp.ndarray, ...]:
    """Each view of uint8 source images `[N, H, W, C]`: its recipe (`recipe_view`) with uniforms
    `u [N, num_draws(recipe)]` drawn per example from `fold_in(rng, v)` for view `v`."""
    out = []
    for v, recipe in enumerate(recipes):
        shape = (images.shape[0], max(recipe_ops.num_draws(recipe), 1))
        u = jax.random.uniform(jax.random.fold_in(rng, v), shape)
        out.append(recipe_view(images, recipe, u))
    return tuple(out)


def device_views(
    images: jnp.ndarray,
    recipes: Sequence[Sequence[Mapping[str, Any]]],
    rng: jax.Array,
    mean: Sequence[float],
    std: Sequence[float],
    dtype=jnp.float32,
) -> tuple[jnp.ndarray, ...]:
    """`config.data.pipeline = 'device'`: the views of uint8 source images `[N, H, W, C]` (the
    step's rows of the split in device memory; `uint8_views`) as model input (`to_model_input`)."""
    views = uint8_views(images, recipes, rng)
    return tuple(
        to_model_input(view, recipe, mean, std, dtype) for view, recipe in zip(views, recipes)
    )
