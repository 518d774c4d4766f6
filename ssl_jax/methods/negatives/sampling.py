"""Negative selection on a sharded bank: InterCLR's inter-image samplers and Ring's conditional
negatives with their annealing schedules (below).

InterCLR's inter-image samplers (mmselfsup 0.x `InterCLRMoCo.contrast_inter`) on a sharded bank.

The official code ranks `normalize(q) @ feature_bank.T` (`[B, 1.28M]`) with `torch.topk`, draws from
the pool and redraws, in a host `while` loop, every draw whose cluster label equals the query's. Here
each sampler is one fixed-shape, jit-able call of the `ssl_jax.methods.memory` bank primitives, with the
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
import numpy as np
from jax.sharding import Mesh

from ssl_jax.methods import losses
from ssl_jax.methods.negatives import bank_search

SAMPLERS = ("semihard", "hard", "random", "semieasy")


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
      official top-k), the exact value of ascending rank N − pool_size + 1 (found with the draw
      in one pass: `bank_search.sample_rows_in_rank_band`); ties at t are all in the pool.
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
        return bank_search.sample_rows_by_label(
            rng, labels, query_labels, num, mesh, replace=True, label_rule="exclude"
        )
    if sampler == "hard":
        values, index = bank_search.bank_topk(bank, queries, num, mesh, **label_filter)
        return index, values > -jnp.inf
    if not 1 <= pool_size <= num_rows:
        raise ValueError(f"pool_size={pool_size} must be in [1, {num_rows}]")
    if sampler == "semihard":  # the pool_size-th largest = ascending rank N - pool_size + 1
        ranks = (num_rows - pool_size + 1, None)
    else:  # semieasy: the pool_size-th smallest
        ranks = (None, pool_size)
    index, valid, _ = bank_search.sample_rows_in_rank_band(
        rng, bank, queries, ranks, num, mesh, replace=False, **label_filter
    )
    return index, valid


@functools.partial(jax.jit, static_argnames=("mesh",))
def cluster_positive(
    rng: jax.Array, labels: jax.Array, query_labels: jnp.ndarray, mesh: Mesh
) -> jnp.ndarray:
    """InterCLR's inter-image positive: a uniform member of each query's own cluster → `[B]` int32.

    labels `[N]` int32 sharded `P('data')`, query_labels `[B]` int32 (= labels[dataset index], so the
    cluster holds the query's own row, which may be drawn, as in the official
    `pos_idx_pool[random_(0, len)]`). No similarities needed: `bank_search.sample_rows_by_label` with the
    'only' rule. A label with no row in the bank would give an arbitrary row (cannot happen for
    labels read from the bank).
    """
    index, _ = bank_search.sample_rows_by_label(
        rng, labels, query_labels, 1, mesh, replace=True, label_rule="only"
    )
    return index[:, 0]


# --------------------------------------------------------------------------------------------------
# Ring / conditional negative sampling (CNCE, Wu et al. ICLR 2021; mhw32/contrastive-ring-public).
# The paper's ring is a band of percentiles (w_l, w_u) of each anchor's similarities to the bank
# (`ring_percentiles` in tests/methods/references.py maps them to the code's fractions); the code
# keeps the `outer` fraction of most similar rows and cuts the closest `inner` fraction of that set
# (`losses.ring_positions`, the one rule every Ring method and loss uses).


def ring_ranks(num_rows: int, outer, inner) -> jnp.ndarray:
    """The ring as ASCENDING 1-based similarity ranks `[lo, hi]` (int32 `[2]`, traced fractions
    allowed): descending positions `start … stop − 1` of `losses.ring_positions` are ascending ranks
    `N − stop + 1 … N − start`."""
    start, stop = losses.ring_positions(num_rows, outer, inner)
    return jnp.stack([num_rows - jnp.asarray(stop) + 1, num_rows - jnp.asarray(start)]).astype(
        jnp.int32
    )


def ring_negatives(
    rng: jax.Array,
    bank: jax.Array,
    queries: jnp.ndarray,
    outer,
    inner,
    num: int,
    mesh: Mesh,
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """IRing's negatives (the code's `NCERing`): `num` (= k − 1) i.i.d. uniform draws WITH replacement
    among each query's ring rows of a sharded bank → (indices `[B, num]` int32 global rows, bounds
    `[B, 2]` float32: the ring's lowest and highest similarity).

    bank `[N, D]` sharded `P('data', None)`, queries `[B, D]` replicated, L2-normalised (stop-gradient
    them); outer/inner floats or traced scalars (annealing; one compilation). The ring is exactly the
    rows at descending positions `losses.ring_positions(N, outer, inner)` (ties at its ends aside: all
    rows tied with an end are in), found by exact ranks and counts (`bank_search.sample_rows_in_rank_band`):
    the bank and the `[B, N]` similarities are never gathered, and the draws do not depend on the
    number of devices. Not jitted itself (Python fractions keep the exact float64 positions of the
    code); the sampler it calls is. The ring is never empty when `int(outer·N) ≥ 1` and inner < 1 (the Ring
    methods check it), so every draw is valid. CMCRing: call it on each cross-view bank.
    """
    ranks = ring_ranks(bank.shape[0], outer, inner)
    index, _, bounds = bank_search.sample_rows_in_rank_band(
        rng, bank, queries, ranks, num, mesh, replace=True
    )
    return index, bounds


# Annealing of the outer fraction per global step (the code's `create_negative_annealing_schedule`,
# `src/utils/policy.py`); the inner fraction is constant (dynamic inner: a fraction of the current
# outer set). 'constant' is every released config; 'linear' the paper's.
ANNEAL_SCHEDULES = ("constant", "linear", "step", "exponential", "adaptive_loss", "adaptive_knn")
STEP_ANNEAL_SIZE = 0.1  # `StepThresholdPolicy(step_size=0.1)`
EXPONENTIAL_DECAY = 0.1  # `ExponentialDecayThresholdPolicy(decay=0.1)`, per step


def ring_outer_schedule(
    anneal: str, step, *, outer: float, anneal_steps: int, init: float = 1.0, final: float = 0.1
) -> jnp.ndarray:
    """The outer fraction at global step `step` (0 at the first step) → float32 scalar.

    n = `anneal_steps` (the code: int(max_anneal_epoch · steps per epoch), max_anneal_epoch = 100):
    - 'constant': `outer` (`ConstantThresholdPolicy(thres_outer)`).
    - 'linear': `linspace(final, init, n)[::-1][step]`, then `final` (`LinearThresholdPolicy`).
    - 'step': `arange(final, init + 0.1, 0.1)[::-1]` (1.0, 0.9, …, 0.1) each repeated
      int(n / 10) steps, then `final` (`StepThresholdPolicy`).
    - 'exponential': `(init − final)·exp(−0.1·step) + final` for step < n, then `final`
      (`ExponentialDecayThresholdPolicy`: per STEP, so it reaches `final` within ~60 steps).
    The adaptive schedules keep their state in the method's buffers (`adaptive_outer_update`).
    """
    step = jnp.asarray(step, jnp.int32)
    if anneal == "constant":
        return jnp.asarray(outer, jnp.float32)
    if anneal == "linear":
        if anneal_steps <= 1:
            return jnp.asarray(final, jnp.float32)
        width = (init - final) / (anneal_steps - 1)
        value = final + (anneal_steps - 1 - step).astype(jnp.float32) * width
        return jnp.where(step < anneal_steps, value, final).astype(jnp.float32)
    if anneal == "step":
        values = np.arange(final, init + STEP_ANNEAL_SIZE, STEP_ANNEAL_SIZE)[::-1]
        repeat = int(anneal_steps / len(values))
        if repeat == 0:
            return jnp.asarray(final, jnp.float32)
        table = jnp.asarray(values, jnp.float32)
        value = table[jnp.minimum(step // repeat, len(values) - 1)]
        return jnp.where(step < repeat * len(values), value, final).astype(jnp.float32)
    if anneal == "exponential":
        value = (init - final) * jnp.exp(-EXPONENTIAL_DECAY * step.astype(jnp.float32)) + final
        return jnp.where(step < anneal_steps, value, final).astype(jnp.float32)
    raise ValueError(f"anneal={anneal!r}: not a step schedule; allowed {ANNEAL_SCHEDULES[:4]}")


def adaptive_outer_init(init: float, window: int) -> dict:
    """The state of `AdaptiveThresholdPolicy`: the current outer fraction, the last `window`
    metrics (a ring buffer) and how many were recorded (arrays only: it lives in the train state)."""
    return {
        "outer": jnp.asarray(init, jnp.float32),
        "window": jnp.zeros((window,), jnp.float32),
        "count": jnp.zeros((), jnp.int32),
    }


def adaptive_outer_update(
    state: dict, metric, *, delta: float, lower_is_better: bool, low: float = 0.1, high: float = 1.0
) -> dict:
    """`AdaptiveThresholdPolicy.record(metric)`: against the mean of the last `window` metrics
    (none yet: no change, the code's mean of an empty list is nan), a metric above it moves the outer
    fraction by +delta if lower is better (an easier problem) else −delta, one below by the
    opposite; clipped to [low, high]; then the metric is recorded. adaptive_loss: delta 0.01,
    window 10, lower is better, recorded every step."""
    window, count = state["window"], state["count"]
    size = window.shape[0]
    filled = jnp.arange(size) < jnp.minimum(count, size)
    mean = jnp.sum(jnp.where(filled, window, 0.0)) / jnp.maximum(jnp.minimum(count, size), 1)
    metric = jnp.asarray(metric, jnp.float32)
    sign = jnp.where(metric > mean, 1.0, jnp.where(metric < mean, -1.0, 0.0))
    sign = jnp.where(count > 0, sign, 0.0) * (1.0 if lower_is_better else -1.0)
    outer = jnp.clip(state["outer"] + sign * delta, low, high)
    return {
        "outer": outer.astype(jnp.float32),
        "window": window.at[count % size].set(metric),
        "count": count + 1,
    }
