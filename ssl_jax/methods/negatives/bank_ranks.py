"""Exact ranks of a sharded bank's similarities (`memory.ROWS`) to a few replicated queries: the
value at given ascending ranks of each query's N similarities (`bank_quantiles`, and
`local_select` inside a `shard_map`, which `bank_search.sample_rows_in_rank_band` uses), with no
sort and no gather: order-preserving uint32 keys of the float32 similarities, bisected on counts
psum'd over the devices. Like `memory`'s, the public function is `jax.jit`-ted with its sizes, flags
and mesh static.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from ssl_jax.methods.memory import ROWS, rows_per_device
from ssl_jax.parallel.sharding import DATA_AXIS


def local_sims(local_bank: jnp.ndarray, queries: jnp.ndarray) -> jnp.ndarray:
    """`[B, N/n]` float32 similarities of the (replicated) queries to this device's rows."""
    return queries.astype(jnp.float32) @ lax.stop_gradient(local_bank).astype(jnp.float32).T


_SIGN = 0x80000000


def _float_to_ordered(x: jnp.ndarray) -> jnp.ndarray:
    """float32 → uint32 with the same order (IEEE bit trick; -0.0 and +0.0 are adjacent keys)."""
    bits = lax.bitcast_convert_type(x, jnp.uint32)
    return jnp.where(bits >= jnp.uint32(_SIGN), ~bits, bits | jnp.uint32(_SIGN))


def _ordered_to_float(key: jnp.ndarray) -> jnp.ndarray:
    bits = jnp.where(key >= jnp.uint32(_SIGN), key & jnp.uint32(_SIGN - 1), ~key)
    return lax.bitcast_convert_type(bits, jnp.float32)


def _inverted_cdf_rank(num_rows: int, q: float) -> int:
    """1-based rank of `np.quantile(x, q, method='inverted_cdf')` in sorted x (numpy's own arithmetic)."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile {q} not in [0, 1]")
    virtual = num_rows * float(q) - 1.0  # numpy: n·q + α + q(1 − α − β) − 1 with α = 0, β = 1
    below = math.floor(virtual)
    index = below + 1 if virtual - below > 0 else below
    return min(max(index, 0), num_rows - 1) + 1


@functools.partial(jax.jit, static_argnames=("qs", "mesh", "iters"))
def bank_quantiles(
    bank: jax.Array,
    queries: jnp.ndarray,
    qs: tuple[float, ...],
    mesh: Mesh,
    *,
    iters: int = 32,
) -> jnp.ndarray:
    """`[B, len(qs)]`: the q-quantile of each query's N similarities `queries @ bank.T`, for q in qs.

    Definition (numpy's `np.quantile(sims, q, method='inverted_cdf')`): the smallest similarity v
    with #{rows: sim ≤ v} ≥ c, c = max(1, ⌈q·N⌉), i.e. `sort(sims)[c - 1]` (q = 0: the minimum, q = 1:
    the maximum; Ring's 90th/99th percentiles are qs = (0.9, 0.99)). No sort and no gather: the float32
    similarities are mapped to order-preserving uint32 keys and each query's answer is bisected on the
    key, each step counting `sum(key ≤ t)` on every device's `[B, N/n]` block and `psum`-ing the
    `[B, len(qs)]` counts (the bracket starts at the psum'd min/max). Tolerance: after i iterations
    the bracket holds at most 2^(32-i) consecutive float32 values and its upper end is returned, so
    the default `iters=32` is EXACT (the returned value is one of the float32 similarities, bit for
    bit), and is computed in fewer passes by `local_select` (bisection to a bracket of ≤ 128 rows,
    then a top-k of the bracket's rows); fewer iterations return an upper bound (plain bisection).
    `qs` are Python floats (static).
    """
    rows_per_device(bank, mesh)
    target = _quantile_ranks(bank.shape[0], qs)

    def local(local_bank, queries):
        sims = local_sims(local_bank, queries)
        if iters >= 32:  # exact: the same value in fewer passes
            return local_select(sims, target)
        return _ordered_to_float(_local_quantile_keys(_float_to_ordered(sims), target, iters))

    return jax.shard_map(local, mesh=mesh, in_specs=(ROWS, P()), out_specs=P(), check_vma=False)(
        bank, queries
    )


def _quantile_ranks(num_rows: int, qs: Sequence[float]) -> jnp.ndarray:
    return jnp.asarray([_inverted_cdf_rank(num_rows, q) for q in qs], jnp.int32)


def _lane_width(rows: int) -> int:
    """`_counter`'s lane count: a divisor of `rows` in [64, 256] (no padded copy of the keys: a
    `[256, 60000]` pad costs as much as 5 counting passes), the most SIMD-friendly (the largest power
    of two dividing it, up to 32), then the nearest 128; else 128 with padding."""
    divisors = [w for w in range(64, 257) if rows % w == 0]
    if not divisors:
        return 128
    return min(divisors, key=lambda w: (-math.gcd(w, 32), abs(w - 128), w))


def _counter(keys: jnp.ndarray):
    """This device's ordered keys `[B, M]` → `count(mid)`: `[B, Q]` int32 #{m: keys[b, m] ≤ mid[b, q]}
    for uint32 `mid` `[B, Q]`, the bisections' counting pass.

    The keys are laid out once as `[B, M/W, W]` (W = `_lane_width(M)`; padded with the largest key,
    its matches subtracted, if M has no divisor near 128) and each pass sums over the middle axis
    into int16 lanes (int32 past 32,767 rows per lane): on XLA:CPU a row sum in int32 vectorises
    badly (docs/performance.md has the timing)."""
    batch, rows = keys.shape
    width = _lane_width(rows)
    pad = -rows % width
    top = jnp.uint32(0xFFFFFFFF)
    lanes = jnp.pad(keys, ((0, 0), (0, pad)), constant_values=top) if pad else keys
    lanes = lanes.reshape(batch, -1, width)
    acc = jnp.int16 if lanes.shape[1] <= jnp.iinfo(jnp.int16).max else jnp.int32

    def count(mid: jnp.ndarray) -> jnp.ndarray:
        per_lane = jnp.sum(lanes[:, None] <= mid[:, :, None, None], axis=2, dtype=acc)
        total = jnp.sum(per_lane.astype(jnp.int32), axis=-1)  # [B, Q]
        return total - pad * (mid == top).astype(jnp.int32)

    return count


def _local_quantile_keys(keys: jnp.ndarray, target: jnp.ndarray, iters: int) -> jnp.ndarray:
    """Inside `shard_map`: this device's ordered keys `[B, N/n]` → the `[B, len(target)]` keys of
    the global ranks `target` (bisection on psum'd counts; see `bank_quantiles`)."""
    lo = lax.pmin(jnp.min(keys, axis=1), DATA_AXIS)
    hi = lax.pmax(jnp.max(keys, axis=1), DATA_AXIS)
    lo = jnp.broadcast_to(lo[:, None], (keys.shape[0], target.shape[0]))
    hi = jnp.broadcast_to(hi[:, None], lo.shape)
    counter = _counter(keys)

    def step(_, bracket):  # invariant: the answer's key lies in [lo, hi]
        lo, hi = bracket
        mid = lo + (hi - lo) // jnp.uint32(2)
        count = counter(mid)
        enough = lax.psum(count, DATA_AXIS) >= target
        return jnp.where(enough, lo, mid + jnp.uint32(1)), jnp.where(enough, mid, hi)

    _, hi = lax.fori_loop(0, iters, step, (lo, hi))
    return hi


SELECT_CAP = 128  # bracket size (rows per query) at which `local_select` switches to a top-k


def local_select(sims: jnp.ndarray, target: jnp.ndarray, cap: int = SELECT_CAP) -> jnp.ndarray:
    """Inside `shard_map`: this device's similarities `[B, N/n]` → the `[B, len(target)]` EXACT
    values of the global ascending ranks `target` (1-based), the same as `_local_quantile_keys` with
    32 iterations, in fewer passes over the block.

    1. Bisection on psum'd counts (as `_local_quantile_keys`), tracking for each bracket [lo, hi]
       the global counts #{< lo} and #{≤ hi}; the midpoint is the float midpoint of the bracket's
       values for the first 24 steps (the number of rows in the bracket halves with each step on a
       smooth distribution: ~log2(N / cap) steps), then the key midpoint (at most 32 more). The loop
       stops when every bracket holds ≤ cap rows or a single key — a condition on psum'd counts, so
       every device runs the same number of steps.
    2. Each device takes its ≤ cap smallest in-bracket values (`lax.top_k`), the `[B, Q, n·cap]`
       candidates are all-gathered, and the answer is the (target − #{< lo})-th smallest of them.
    """
    keys = _float_to_ordered(sims)
    batch, num_q = sims.shape[0], target.shape[0]
    num_rows = lax.psum(sims.shape[1], DATA_AXIS)
    lo = lax.pmin(jnp.min(keys, axis=1), DATA_AXIS)
    hi = lax.pmax(jnp.max(keys, axis=1), DATA_AXIS)
    lo = jnp.broadcast_to(lo[:, None], (batch, num_q))
    hi = jnp.broadcast_to(hi[:, None], lo.shape)
    below = jnp.zeros(lo.shape, jnp.int32)  # #{key < lo}
    upto = jnp.full(lo.shape, num_rows, jnp.int32)  # #{key ≤ hi}
    value_steps = 24
    counter = _counter(keys)

    def wide(lo, hi, below, upto):
        return (upto - below > cap) & (hi > lo)

    def cond(state):
        step, lo, hi, below, upto = state
        return (step < value_steps + 32) & jnp.any(wide(lo, hi, below, upto))

    def body(state):
        step, lo, hi, below, upto = state
        lo_v, hi_v = _ordered_to_float(lo), _ordered_to_float(hi)
        by_value = _float_to_ordered(lo_v * 0.5 + hi_v * 0.5)
        by_key = lo + (hi - lo) // jnp.uint32(2)
        mid = jnp.where(step < value_steps, by_value, by_key)
        mid = jnp.clip(mid, lo, jnp.maximum(hi, jnp.uint32(1)) - jnp.uint32(1))  # lo ≤ mid < hi
        count = lax.psum(counter(mid), DATA_AXIS)
        enough = count >= target
        active = wide(lo, hi, below, upto)
        lo = jnp.where(active & ~enough, mid + jnp.uint32(1), lo)
        below = jnp.where(active & ~enough, count, below)
        hi = jnp.where(active & enough, mid, hi)
        upto = jnp.where(active & enough, count, upto)
        return step + 1, lo, hi, below, upto

    _, lo, hi, below, _ = lax.while_loop(cond, body, (jnp.int32(0), lo, hi, below, upto))
    inside = (keys[:, None, :] >= lo[:, :, None]) & (keys[:, None, :] <= hi[:, :, None])
    k = min(cap, sims.shape[1])
    local = -lax.top_k(jnp.where(inside, -sims[:, None, :], -jnp.inf), k)[0]  # ascending, +inf pad
    gathered = lax.all_gather(local, DATA_AXIS, axis=2, tiled=True)  # [B, Q, n·k]
    smallest = -lax.top_k(-gathered, min(cap, gathered.shape[-1]))[0]  # ascending
    rank = jnp.clip(target[None, :] - below - 1, 0, smallest.shape[-1] - 1)
    picked = jnp.take_along_axis(smallest, rank[:, :, None], axis=-1)[:, :, 0]
    return jnp.where(hi == lo, _ordered_to_float(lo), picked)
