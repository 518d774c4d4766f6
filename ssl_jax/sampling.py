"""InterCLR's inter-image samplers (mmselfsup 0.x `InterCLRMoCo.contrast_inter`) on a sharded bank.

The official code ranks `normalize(q) @ feature_bank.T` (`[B, 1.28M]`) with `torch.topk`, draws from
the pool and redraws, in a host `while` loop, every draw whose cluster label equals the query's. Here
each sampler is one fixed-shape, jit-able call of the `ssl_jax.memory` bank primitives, with the
same-cluster rows removed by the primitives' label filter instead of a redraw: the bank `[N, D]`
(sharded `P('data', None)`) and the `[B, N]` similarities are never gathered, and the draws do not
depend on the number of devices.

Why the label filter gives the official distribution. A rejection redraw ("draw uniformly from a set
S; while the draw lies in the excluded subset X, draw again") returns a uniform element of S \\ X:
each attempt is uniform on S, so conditioned on landing in S \\ X it is uniform there. So
- `random` (official: the alias sampler `AliasMethod(ones(N))`, i.i.d. with replacement, each
  offending position redrawn with a fresh i.i.d. draw) = i.i.d. uniform draws from
  {rows: label ≠ query's}: the same distribution exactly (`replace=True` here).
- `semihard` / `semieasy` (official: `torch.multinomial(ones(pool), num)` = a uniform ordered subset
  of the pool without replacement; offending positions j get entry j of a fresh `multinomial` draw,
  repeated until none collide): every position is marginally uniform over E = pool \\ same-cluster
  rows, and where no position collides the result is a uniform ordered num-subset of E — which is
  what we draw (`replace=False` among E). The one difference: a redrawn position may repeat a row
  kept at another position (the fresh draw does not know the kept rows), so the official output can
  hold a few duplicates (expected ≈ m·num/|E| for m redrawn positions, m ≈ num·|X ∩ pool|/pool);
  ours never does. The expected number of times each row is drawn (num/|E|) is the same in both.
- `hard` (official: `topk(num + max cluster size)`, delete same-cluster rows, keep the first num):
  the num most similar rows with another label, sorted by similarity = `bank_topk` with the filter.
- positive (official: `label_bank == l` then `random_(0, pool size)`): a uniform member of the own
  cluster, the query's own row included.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.sharding import Mesh

from ssl_jax import memory

SAMPLERS = ("semihard", "hard", "random", "semieasy")


def _pool_quantile(num_rows: int, rank: int) -> float:
    """q whose inverted-CDF rank (`memory.bank_quantiles`) is `rank` (1-based, ascending).

    (rank - 0.5)/N sits half a step inside the rank's interval, so float rounding cannot move it.
    """
    q = (rank - 0.5) / num_rows
    assert memory._inverted_cdf_rank(num_rows, q) == rank, (num_rows, rank, q)
    return q


@functools.partial(jax.jit, static_argnames=("sampler", "num", "pool_size", "mesh"))
def inter_negatives(
    rng: jax.Array,
    sampler: str,
    bank: jax.Array,
    labels: jax.Array,
    queries: jnp.ndarray,
    query_labels: jnp.ndarray,
    num: int,
    pool_size: int,
    mesh: Mesh,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """InterCLR's `num` negatives per query from other clusters → (indices `[B, num]` int32 global
    rows, valid `[B, num]` bool).

    bank `[N, D]` sharded `P('data', None)`, labels `[N]` int32 sharded `P('data')`, queries `[B, D]`
    replicated and L2-normalised, query_labels `[B]` int32 (the queries' own cluster labels).
    - 'semihard': uniform without replacement among the `pool_size` most similar rows (the official
      `semihard_neg_pool_num` = 128000) whose label ≠ the query's. The pool is {sim ≥ t}, t = the
      pool_size-th largest similarity over ALL rows (same-cluster rows count in the pool, as in the
      official top-k), from the exact `memory.bank_quantiles` rank (computed with the draw in one
      pass: `memory.sample_rows_in_quantile_band`); ties at t are all in the pool.
    - 'semieasy': the same with the `pool_size` least similar rows ({sim ≤ t}).
    - 'random': i.i.d. uniform (with replacement, as the official alias sampler) over all rows whose
      label ≠ the query's; `pool_size` unused, the bank not read.
    - 'hard': the `num` most similar rows whose label ≠ the query's, sorted descending.
    valid is False exactly where the eligible set has fewer than `num` rows (without replacement:
    positions j ≥ its size; 'random': all positions when it is empty); those entries are arbitrary
    rows. See the module docstring for why this is the official rejection redraw's distribution.
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler={sampler!r} not in {SAMPLERS}")
    num_rows = bank.shape[0]
    if not 1 <= num <= num_rows:
        raise ValueError(f"num={num} must be in [1, {num_rows}]")
    label_filter = dict(labels=labels, query_labels=query_labels, label_rule="exclude")
    if sampler == "random":
        return memory.sample_rows_by_label(
            rng, labels, query_labels, num, mesh, replace=True, label_rule="exclude"
        )
    if sampler == "hard":
        values, index = memory.bank_topk(bank, queries, num, mesh, **label_filter)
        return index, values > -jnp.inf
    if not 1 <= pool_size <= num_rows:
        raise ValueError(f"pool_size={pool_size} must be in [1, {num_rows}]")
    if sampler == "semihard":  # the pool_size-th largest = ascending rank N - pool_size + 1
        ends = (_pool_quantile(num_rows, num_rows - pool_size + 1), None)
    else:  # semieasy: the pool_size-th smallest
        ends = (None, _pool_quantile(num_rows, pool_size))
    return memory.sample_rows_in_quantile_band(
        rng, bank, queries, *ends, num, mesh, replace=False, **label_filter
    )


@functools.partial(jax.jit, static_argnames=("mesh",))
def cluster_positive(
    rng: jax.Array, labels: jax.Array, query_labels: jnp.ndarray, mesh: Mesh
) -> jnp.ndarray:
    """InterCLR's inter-image positive: a uniform member of each query's own cluster → `[B]` int32.

    labels `[N]` int32 sharded `P('data')`, query_labels `[B]` int32 (= labels[dataset index], so the
    cluster holds the query's own row, which may be drawn, as in the official
    `pos_idx_pool[random_(0, len)]`). No similarities needed: `memory.sample_rows_by_label` with the
    'only' rule. A label with no row in the bank would give an arbitrary row (cannot happen for
    labels read from the bank).
    """
    index, _ = memory.sample_rows_by_label(
        rng, labels, query_labels, 1, mesh, replace=True, label_rule="only"
    )
    return index[:, 0]
