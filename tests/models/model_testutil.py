"""Helpers for the model tests: abstract init (no RNG compile) and random variables filled in numpy.

`jax.jit(model.init)` of a ResNet spends ~10 s compiling the threefry draws on CPU; the tests build
the variable tree with `jax.eval_shape` and fill it with numpy draws instead (init itself is tested
on single blocks).
"""

import jax
import jax.numpy as jnp
import numpy as np


def abstract_variables(model, x_shape, **kwargs):
    """ShapeDtypeStruct tree of `model.init` for an input of `x_shape` (float32)."""
    x = jax.ShapeDtypeStruct(x_shape, jnp.float32)
    return jax.eval_shape(lambda x: model.init(jax.random.key(0), x, train=False, **kwargs), x)


def random_variables(model, x_shape, seed=0, dtype=None, **kwargs):
    """Variables of `model` with random numpy values of realistic scale (non-trivial BN stats).

    `dtype` overrides the leaves' dtypes (float64 under `jax.enable_x64` for exact comparisons).
    """
    rng = np.random.default_rng(seed)

    def fill(path, leaf):
        name = path[-1].key
        shape = leaf.shape
        if name == "kernel":
            fan_out = int(np.prod(shape[:-2])) * shape[-1] if len(shape) > 2 else shape[-1]
            value = rng.normal(0.0, np.sqrt(2.0 / fan_out), shape)
        elif name == "scale":
            value = rng.uniform(0.5, 1.5, shape)
        elif name == "bias":
            value = rng.normal(0.0, 0.1, shape)
        elif name == "mean":
            value = rng.normal(0.0, 0.1, shape)
        elif name == "var":
            value = rng.uniform(0.5, 2.0, shape)
        else:
            raise KeyError(name)
        # float32-representable values, so a float64 copy equals the float32 one exactly
        return jnp.asarray(value.astype(np.float32), dtype or leaf.dtype)

    return jax.tree_util.tree_map_with_path(fill, abstract_variables(model, x_shape, **kwargs))


def max_rel_err(a, b) -> float:
    """max |a - b| / max |b| (scale-free; b is the reference)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))
