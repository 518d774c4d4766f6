"""Max-pooling as torch's `MaxPool2d` (padding with -inf), with a gradient XLA:CPU runs fast.

`nn.max_pool` is `lax.reduce_window`; its gradient (select-and-scatter) is lowered by XLA:CPU to a
variadic reduce-window that carries four `s32` index maps the size of the padded input, slower
than PyTorch's pool. `slice_max_pool` takes the maximum of the kh·kw strided slices of the padded
input and routes each window's gradient to its first maximum in row-major order (torch's choice)
with masks and pads, faster than both (the timings: docs/performance.md). `max_pool` uses it on the
CPU backend and `nn.max_pool` elsewhere (cuDNN / TPU pooling).
"""

from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp

from ssl_jax.models.conv import output_hw, strided_taps


@partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3))
def slice_max_pool(x: jnp.ndarray, window, strides, padding) -> jnp.ndarray:
    """`[N, H, W, C]` → `[N, oh, ow, C]`: the max of each window, padding counted as -inf."""
    return _forward(x, window, strides, padding)[0]


def _forward(x, window, strides, padding):
    pads = ((0, 0), tuple(padding[0]), tuple(padding[1]), (0, 0))
    xp = jnp.pad(x, pads, constant_values=-jnp.inf)
    taps = strided_taps(xp, window, strides, output_hw(x.shape[1:3], window, strides, padding))
    out = taps[0]
    for tap in taps[1:]:
        out = jnp.maximum(out, tap)
    return out, xp


def _fwd(x, window, strides, padding):
    out, xp = _forward(x, window, strides, padding)
    return out, (xp, out)


def _bwd(window, strides, padding, residuals, g):
    """Each window's cotangent goes to its first maximum (row-major), as torch's MaxPool2d."""
    xp, out = residuals
    kw, (sh, sw), (oh, ow) = window[1], strides, out.shape[1:3]
    taken = jnp.zeros(out.shape, bool)
    dxp = jnp.zeros_like(xp)
    zero = jnp.zeros((), g.dtype)
    for t, tap in enumerate(strided_taps(xp, window, strides, (oh, ow))):
        i, j = divmod(t, kw)
        hit = (tap == out) & ~taken
        taken = taken | hit
        config = (
            (0, 0, 0),
            (i, xp.shape[1] - i - sh * (oh - 1) - 1, sh - 1),
            (j, xp.shape[2] - j - sw * (ow - 1) - 1, sw - 1),
            (0, 0, 0),
        )
        dxp = dxp + jax.lax.pad(jnp.where(hit, g, zero), zero, config)
    (top, _), (left, _) = padding
    h, w = xp.shape[1] - sum(padding[0]), xp.shape[2] - sum(padding[1])
    return (dxp[:, top : top + h, left : left + w, :],)


slice_max_pool.defvjp(_fwd, _bwd)


def max_pool(x: jnp.ndarray, window, strides, padding) -> jnp.ndarray:
    """torch's `MaxPool2d(window, strides, padding)` on NHWC: `slice_max_pool` on CPU, else
    `nn.max_pool` (`reduce_window`, which pads with its init value -inf)."""
    window, strides = tuple(window), tuple(strides)
    padding = tuple(tuple(p) for p in padding)
    if jax.default_backend() == "cpu":
        return slice_max_pool(x, window, strides, padding)
    return nn.max_pool(x, window, strides=strides, padding=padding)
