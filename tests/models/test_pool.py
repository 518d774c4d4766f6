"""`pool.slice_max_pool` (the CPU max-pool) equals `nn.max_pool` in values and gradients, and on ties
routes each window's gradient to its first maximum in row-major order, as torch's MaxPool2d."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ssl_jax.models.pool import max_pool, slice_max_pool


def _numpy_pool_grad(x, g, window, strides, padding):
    """Independent reference: pad with -inf, and for each window add its cotangent at the window's
    first maximum (np.argmax of the row-major flattened window)."""
    (kh, kw), (sh, sw) = window, strides
    xp = np.pad(x, ((0, 0), padding[0], padding[1], (0, 0)), constant_values=-np.inf)
    dxp = np.zeros_like(xp)
    n, oh, ow, c = g.shape
    for b, oy, ox, ch in np.ndindex(n, oh, ow, c):
        win = xp[b, oy * sh : oy * sh + kh, ox * sw : ox * sw + kw, ch]
        ky, kx = divmod(int(np.argmax(win)), kw)
        dxp[b, oy * sh + ky, ox * sw + kx, ch] += g[b, oy, ox, ch]
    (top, _), (left, _) = padding
    return dxp[:, top : top + x.shape[1], left : left + x.shape[2]]


CASES = [
    ((3, 3), (2, 2), ((1, 1), (1, 1)), (2, 14, 14, 3)),  # the ImageNet stem's pool
    ((3, 3), (2, 2), ((1, 1), (1, 1)), (2, 9, 7, 2)),  # odd sides
    ((2, 2), (2, 2), ((0, 0), (0, 0)), (1, 6, 8, 2)),
    ((3, 2), (1, 2), ((1, 0), (0, 1)), (1, 5, 6, 2)),  # overlapping rows, asymmetric pads
]


@pytest.mark.parametrize("window, strides, padding, shape", CASES)
def test_equals_nn_max_pool_with_gradients(window, strides, padding, shape):
    with jax.enable_x64(True):
        rng = np.random.default_rng(sum(shape))
        x = jnp.asarray(rng.normal(size=shape))  # no ties
        ref = lambda x: nn.max_pool(x, window, strides=strides, padding=padding)
        ours = lambda x: slice_max_pool(x, window, strides, padding)
        y = ours(x)
        np.testing.assert_array_equal(y, ref(x))
        g = jnp.asarray(rng.normal(size=y.shape))
        grad = lambda f: jax.jit(jax.grad(lambda x: jnp.sum(f(x) * g)))(x)
        np.testing.assert_allclose(grad(ours), grad(ref), rtol=1e-12, atol=1e-12)
        expected = _numpy_pool_grad(np.asarray(x), np.asarray(g), window, strides, padding)
        np.testing.assert_allclose(grad(ours), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("window, strides, padding, shape", CASES)
def test_ties_go_to_the_first_maximum(window, strides, padding, shape):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, shape).astype(np.float32)  # most windows hold a tie
    g = rng.normal(size=slice_max_pool(x, window, strides, padding).shape).astype(np.float32)
    dx = jax.grad(lambda x: jnp.sum(slice_max_pool(x, window, strides, padding) * g))(x)
    expected = _numpy_pool_grad(x, g, window, strides, padding)
    np.testing.assert_allclose(dx, expected, rtol=1e-6, atol=1e-6)
    # the gradient's total is the cotangent's: each window's goes to one pixel, not split
    np.testing.assert_allclose(np.sum(dx), np.sum(g), rtol=1e-5)


def test_max_pool_is_torch_semantics_on_this_backend():
    x = jnp.asarray(np.random.default_rng(2).normal(size=(2, 8, 8, 3)), jnp.float32)
    args = ((3, 3), (2, 2), ((1, 1), (1, 1)))
    np.testing.assert_array_equal(
        max_pool(x, *args), nn.max_pool(x, args[0], strides=args[1], padding=args[2])
    )
    if jax.default_backend() == "cpu":
        jaxpr = str(jax.make_jaxpr(lambda x: max_pool(x, *args))(x))
        assert "custom_vjp" in jaxpr and "reduce_window" not in jaxpr
