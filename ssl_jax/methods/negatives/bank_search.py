"""Bank search: rank and sample the rows of a sharded bank (`memory.ROWS`) by their similarity to a
few replicated queries, never gathering the bank.

`bank_topk`, `sample_rows_where`, `sample_rows_in_rank_band` and `sample_rows_by_label` work per
device, then merge small per-query results (candidates, counts, indices); the bank and the `[B, N]`
similarities never leave their devices. The exact similarity at a rank (a quantile, a band's ends)
is `bank_ranks`'s. Like `memory`'s, the public functions are `jax.jit`-ted with their sizes, flags
and mesh static.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from ssl_jax.methods.memory import ROWS, rows_per_device
from ssl_jax.methods.negatives import bank_ranks
from ssl_jax.parallel.sharding import DATA_AXIS


def _merge_topk(
    values: jnp.ndarray, indices: jnp.ndarray, k: int
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Inside shard_map: merge each device's `[B, k_loc]` candidates into the global top-k.

    n a power of two: a butterfly of log2(n) rounds, each exchanging the current `[B, ≤k]` block with
    the device `d ^ 2^r` (`ppermute`) and keeping the top-k of the two blocks concatenated in device
    order, so a device holds at most `[B, 2k]` candidates (an all-gather would hold `[B, n·k]`: 2 GB
    per device for B = 256, k = 128000 on 8 devices). Ties keep the all-gather's order (lower device
    first, then each device's own order; `lax.top_k` keeps the lower index first), so the result is
    the same as `top_k(all_gather(...))`, which is used when n is not a power of two.
    """
    n = lax.axis_size(DATA_AXIS)
    if n == 1:
        return values, indices
    if n & (n - 1):
        values = lax.all_gather(values, DATA_AXIS, axis=1, tiled=True)  # [B, n * k_loc]
        indices = lax.all_gather(indices, DATA_AXIS, axis=1, tiled=True)
        values, j = lax.top_k(values, k)
        return values, jnp.take_along_axis(indices, j, axis=1)
    device = lax.axis_index(DATA_AXIS)
    step = 1
    while step < n:
        perm = [(d, d ^ step) for d in range(n)]
        other_values = lax.ppermute(values, DATA_AXIS, perm)
        other_indices = lax.ppermute(indices, DATA_AXIS, perm)
        upper = (device & step) != 0  # this device's block comes second in device order
        first_v = jnp.where(upper, other_values, values)
        second_v = jnp.where(upper, values, other_values)
        first_i = jnp.where(upper, other_indices, indices)
        second_i = jnp.where(upper, indices, other_indices)
        values = jnp.concatenate([first_v, second_v], axis=1)
        indices = jnp.concatenate([first_i, second_i], axis=1)
        values, j = lax.top_k(values, min(k, values.shape[1]))
        indices = jnp.take_along_axis(indices, j, axis=1)
        step *= 2
    return values, indices


LABEL_RULES = ("exclude", "only")


def _label_operands(
    labels, query_labels, label_rule: str, num_rows: int, batch: int
) -> tuple[tuple[jnp.ndarray, ...], tuple[P, ...]]:
    """Checks the optional label filter → (extra shard_map operands, their in_specs); () without."""
    if (labels is None) != (query_labels is None):
        raise ValueError("labels and query_labels go together")
    if labels is None:
        return (), ()
    if label_rule not in LABEL_RULES:
        raise ValueError(f"label_rule={label_rule!r} not in {LABEL_RULES}")
    if labels.shape != (num_rows,) or query_labels.shape != (batch,):
        raise ValueError(
            f"labels {labels.shape} / query_labels {query_labels.shape}: want ({num_rows},) / ({batch},)"
        )
    ops = (jnp.asarray(labels, jnp.int32), jnp.asarray(query_labels, jnp.int32))
    return ops, (P(DATA_AXIS), P())


def _label_mask(local_labels: jnp.ndarray, query_labels: jnp.ndarray, rule: str) -> jnp.ndarray:
    """`[B, N/n]` eligibility: 'exclude' = label differs from the query's, 'only' = label equal."""
    same = local_labels[None, :] == query_labels[:, None]
    return ~same if rule == "exclude" else same


@functools.partial(jax.jit, static_argnames=("k", "mesh", "label_rule"))
def bank_topk(
    bank: jax.Array,
    queries: jnp.ndarray,
    k: int,
    mesh: Mesh,
    *,
    labels: jax.Array | None = None,
    query_labels: jnp.ndarray | None = None,
    label_rule: str = "exclude",
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """The k largest similarities `queries @ bank.T` of each query and their bank rows.

    bank `[N, D]` sharded `ROWS`, queries `[B, D]` replicated → (values `[B, k]` float32, sorted
    descending, indices `[B, k]` int32 global row ids). Exact (the same set as a top-k of the full
    `[B, N]` matrix; ties in any consistent order). Each device takes `lax.top_k` of its own `[B, N/n]`
    block (k capped at N/n) and the candidates are merged by `_merge_topk` (a butterfly holding at
    most `[B, 2k]` per device): the bank is never gathered. InterCLR's k = 128000 pool therefore needs
    ~B·3k·8 bytes per device (0.8 GB for B = 256), no longer n times that.
    Label filter (optional): `labels` `[N]` int32 sharded `P('data')`, `query_labels` `[B]` int32;
    `label_rule='exclude'` ranks only rows whose label differs from the query's, 'only' only rows with
    the same label (InterCLR's `hard` negatives are the former). Ineligible rows score -inf: where
    fewer than k rows are eligible the tail has value -inf (arbitrary rows; mask on `values > -inf`).
    """
    num_devices, per_device = rows_per_device(bank, mesh)
    if not 1 <= k <= bank.shape[0]:
        raise ValueError(f"k={k} must be in [1, {bank.shape[0]}]")
    k_local = min(k, per_device)
    label_ops, label_specs = _label_operands(
        labels, query_labels, label_rule, bank.shape[0], queries.shape[0]
    )

    def local(local_bank, queries, *label_ops):
        sims = bank_ranks.local_sims(local_bank, queries)
        if label_ops:
            sims = jnp.where(_label_mask(*label_ops, label_rule), sims, -jnp.inf)
        values, index = lax.top_k(sims, k_local)
        index = index.astype(jnp.int32) + lax.axis_index(DATA_AXIS).astype(jnp.int32) * per_device
        return _merge_topk(values, index, k)

    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(ROWS, P(), *label_specs),
        out_specs=(P(), P()),
        check_vma=False,
    )(bank, queries, *label_ops)


def _check_num(num: int, num_rows: int) -> None:
    if not 1 <= num <= num_rows:
        raise ValueError(f"num={num} must be in [1, {num_rows}]")


def _mix32(x: jnp.ndarray) -> jnp.ndarray:
    """A bijective avalanche hash of uint32 (Wellons' lowbias32): cheap per-element random bits."""
    x = (x ^ (x >> jnp.uint32(16))) * jnp.uint32(0x7FEB352D)
    x = (x ^ (x >> jnp.uint32(15))) * jnp.uint32(0x846CA68B)
    return x ^ (x >> jnp.uint32(16))


@functools.partial(jax.jit, static_argnames=("num", "mesh", "replace", "label_rule"))
def sample_rows_where(
    rng: jax.Array,
    bank: jax.Array,
    queries: jnp.ndarray,
    lo: jnp.ndarray,
    hi: jnp.ndarray,
    num: int,
    mesh: Mesh,
    *,
    replace: bool,
    labels: jax.Array | None = None,
    query_labels: jnp.ndarray | None = None,
    label_rule: str = "exclude",
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """`num` uniform draws per query among the rows whose similarity lies in the band [lo[b], hi[b]].

    bank `[N, D]` sharded `ROWS`, queries `[B, D]`, lo/hi `[B]` (e.g. from
    `bank_ranks.bank_quantiles`; both ends inclusive) → (indices `[B, num]` int32 global rows, valid
    `[B, num]` bool). Fixed shapes; entries with valid False hold arbitrary in-range rows and must be
    masked by the caller.
    - `replace=False`: a uniformly random subset of the band in random order (Gumbel top-k with equal
      logits = top-k of i.i.d. uniform keys, out-of-band rows masked to -inf): each device takes the
      top `min(num, N/n)` keys of its rows, the candidates are merged. The keys are 30 bits of a
      two-round integer hash (lowbias32) of (query, global row) seeded from `rng` — much cheaper on
      CPU than threefry bits for `[B, N]` — so draws do not depend on the device count. valid[b, j] is
      False exactly for j ≥ (band size of b), i.e. where the band has fewer than `num` rows.
    - `replace=True`: i.i.d. uniform draws from the band: per-device band counts are all-gathered (n
      numbers per query), `num` ranks are drawn in [0, count_b) (`jax.random.randint`), and each device
      resolves the ranks in its range (binary search on the cumsum of its band counts per 32-row
      word of band bits, then the set bit of that rank in the word, `_select_bit`); results are
      psum'd. valid[b] is all False exactly where the band of b is empty.
    Label filter (optional, as in `bank_topk`): with `labels` `[N]` sharded `P('data')` and
    `query_labels` `[B]`, a row is eligible only if it is in the band AND ('exclude') its label differs
    from the query's / ('only') equals it; "band" above then means this eligible set. Without labels
    the results are those of the unfiltered sampler, bit for bit.
    Never gathers the bank or the similarities.
    """
    rows_per_device(bank, mesh)
    _check_num(num, bank.shape[0])
    lo = jnp.asarray(lo, jnp.float32)
    hi = jnp.asarray(hi, jnp.float32)
    label_ops, label_specs = _label_operands(
        labels, query_labels, label_rule, bank.shape[0], queries.shape[0]
    )

    def eligible(local_bank, queries, lo, hi, *label_ops):
        sims = bank_ranks.local_sims(local_bank, queries)
        band = (sims >= lo[:, None]) & (sims <= hi[:, None])  # [B, N/n]
        return band & _label_mask(*label_ops, label_rule) if label_ops else band

    return _sample_eligible(
        rng,
        eligible,
        (bank, queries, lo, hi, *label_ops),
        (ROWS, P(), P(), P(), *label_specs),
        bank.shape[0],
        queries.shape[0],
        num,
        mesh,
        replace,
    )


@functools.partial(jax.jit, static_argnames=("num", "mesh", "replace", "label_rule"))
def sample_rows_in_rank_band(
    rng: jax.Array,
    bank: jax.Array,
    queries: jnp.ndarray,
    ranks,
    num: int,
    mesh: Mesh,
    *,
    replace: bool,
    labels: jax.Array | None = None,
    query_labels: jnp.ndarray | None = None,
    label_rule: str = "exclude",
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """`sample_rows_where` with the band's ends given as ASCENDING similarity ranks of each query:
    the band is [sort(sims)[lo − 1], sort(sims)[hi − 1]] for `ranks = (lo, hi)` (1-based, both
    inclusive, 1 ≤ lo ≤ hi ≤ N; ties at the ends are all in the band), the values found exactly by
    `bank_ranks.local_select` (as `bank_ranks.bank_quantiles`) from the same `[B, N/n]` similarities
    the draw uses, so each device computes them once: the same draws, bit for bit, as
    `sample_rows_where` with lo/hi from `bank_quantiles` at quantiles of those ranks. `ranks` is a
    pair of ints or int32 scalars, which may be traced
    (Ring's annealed outer set: one compilation for every step), or None for an open end
    (InterCLR's one-sided semi-hard / semi-easy pools), or one int32 `[2]` array. The label filter
    is `sample_rows_where`'s. → (indices `[B, num]`, valid `[B, num]`, bounds `[B, 2]` float32:
    the similarities at ranks lo and hi, −inf / +inf for an open end).
    """
    rows_per_device(bank, mesh)
    if not replace:  # with replacement any number of draws (Ring: k − 1 = 4095 from any bank)
        _check_num(num, bank.shape[0])
    lo, hi = (ranks[0], ranks[1]) if not isinstance(ranks, (tuple, list)) else ranks
    if lo is None and hi is None:
        raise ValueError("give a lower and/or an upper rank")
    target = jnp.stack([jnp.asarray(r) for r in (lo, hi) if r is not None]).astype(jnp.int32)
    label_ops, label_specs = _label_operands(
        labels, query_labels, label_rule, bank.shape[0], queries.shape[0]
    )

    def eligible(local_bank, queries, target, *label_ops):
        sims = bank_ranks.local_sims(local_bank, queries)
        at = bank_ranks.local_select(sims, target)  # [B, 1 or 2]
        lower = at[:, :1] if lo is not None else jnp.full_like(at[:, :1], -jnp.inf)
        upper = at[:, -1:] if hi is not None else jnp.full_like(at[:, :1], jnp.inf)
        band = jnp.ones(sims.shape, bool)
        if lo is not None:
            band &= sims >= lower
        if hi is not None:
            band &= sims <= upper
        band = band & _label_mask(*label_ops, label_rule) if label_ops else band
        return band, jnp.concatenate([lower, upper], axis=1)

    return _sample_eligible(
        rng,
        eligible,
        (bank, queries, target, *label_ops),
        (ROWS, P(), P(), *label_specs),
        bank.shape[0],
        queries.shape[0],
        num,
        mesh,
        replace,
        with_extra=True,
    )


@functools.partial(jax.jit, static_argnames=("num", "mesh", "replace", "label_rule"))
def sample_rows_by_label(
    rng: jax.Array,
    labels: jax.Array,
    query_labels: jnp.ndarray,
    num: int,
    mesh: Mesh,
    *,
    replace: bool,
    label_rule: str = "only",
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """`sample_rows_where` on the label filter alone (no similarities, no bank): `num` uniform draws
    per query among the rows whose label equals ('only') / differs from ('exclude') `query_labels[b]`.

    labels `[N]` int32 sharded `P('data')`, query_labels `[B]` int32 → (indices `[B, num]` int32,
    valid `[B, num]` bool), with the same replace / valid semantics and the same device-count
    independence as `sample_rows_where`. InterCLR's positive (a uniform member of the own cluster) and
    its `random` negatives (i.i.d. over the other clusters) need only this.
    """
    if labels.ndim != 1:
        raise ValueError(f"labels must be [N], got {labels.shape}")
    if labels.shape[0] % mesh.shape[DATA_AXIS]:
        raise ValueError(f"{labels.shape[0]} rows cannot be split over {mesh.shape[DATA_AXIS]}")
    if not 1 <= num <= labels.shape[0]:
        raise ValueError(f"num={num} must be in [1, {labels.shape[0]}]")
    label_ops, label_specs = _label_operands(
        labels, query_labels, label_rule, labels.shape[0], query_labels.shape[0]
    )
    return _sample_eligible(
        rng,
        lambda *ops: _label_mask(*ops, label_rule),
        label_ops,
        label_specs,
        labels.shape[0],
        query_labels.shape[0],
        num,
        mesh,
        replace,
    )


def _pack_bits(mask: jnp.ndarray, width: int = 32) -> jnp.ndarray:
    """`[B, M]` bool → `[B, ceil(M / 32)]` uint32: bit j of word c is `mask[:, 32·c + j]` (0 past M)."""
    pad = -mask.shape[1] % width
    bits = jnp.pad(mask, ((0, 0), (0, pad))).reshape(mask.shape[0], -1, width).astype(jnp.uint32)
    return jnp.sum(bits << jnp.arange(width, dtype=jnp.uint32), axis=2, dtype=jnp.uint32)


def _select_bit(word: jnp.ndarray, rank: jnp.ndarray) -> jnp.ndarray:
    """The position (0-31, lowest bit first) of the set bit of rank `rank` (0-based) in each uint32
    `word`: five halvings on population counts, so the with-replacement draw reads one word per
    draw instead of its 32 rows (docs/performance.md). int32, shaped as `rank`."""
    pos = jnp.zeros(rank.shape, jnp.int32)
    for width in (16, 8, 4, 2, 1):
        low = (word >> pos.astype(jnp.uint32)) & jnp.uint32((1 << width) - 1)
        count = lax.population_count(low).astype(jnp.int32)
        up = rank >= count
        pos = pos + jnp.where(up, width, 0)
        rank = rank - jnp.where(up, count, 0)
    return pos


def _sample_eligible(
    rng: jax.Array,
    eligible,
    operands: tuple,
    specs: tuple,
    num_rows: int,
    batch: int,
    num: int,
    mesh: Mesh,
    replace: bool,
    with_extra: bool = False,
) -> tuple[jnp.ndarray, ...]:
    """The samplers of `sample_rows_where`: `eligible(*local operands)` → this device's `[B, N/n]`
    bool mask of the rows that may be drawn; operands are sharded by `specs`. `with_extra`:
    `eligible` returns (mask, extra) with `extra` replicated, and it is returned third."""
    out_specs = (P(), P(), P()) if with_extra else (P(), P())

    def split(out):
        return out if with_extra else (out, None)

    def outputs(index, valid, extra):
        return (index, valid, extra) if with_extra else (index, valid)

    num_devices = mesh.shape[DATA_AXIS]
    per_device = num_rows // num_devices

    if not replace:
        seeds = jax.random.bits(rng, (2,), jnp.uint32)

        def local(*args):
            *local_ops, seeds = args
            band, extra = split(eligible(*local_ops))
            offset = lax.axis_index(DATA_AXIS).astype(jnp.int32) * per_device
            cell = lax.broadcasted_iota(jnp.uint32, band.shape, 0) * jnp.uint32(num_rows)
            cell = (
                cell + lax.broadcasted_iota(jnp.uint32, band.shape, 1) + offset.astype(jnp.uint32)
            )
            bits = _mix32(_mix32(cell ^ seeds[0]) + seeds[1])  # i.i.d.-looking per (query, row)
            # 30 random bits + the smallest normal exponent, bitcast: positive normal floats in
            # the order of the integers (float32 top_k has a fast CPU kernel, int32 sorts).
            keys = lax.bitcast_convert_type(
                (bits >> jnp.uint32(2)) + jnp.uint32(1 << 23), jnp.float32
            )
            score = jnp.where(band, keys, -jnp.inf)
            score, index = lax.top_k(score, min(num, per_device))
            score, index = _merge_topk(score, index.astype(jnp.int32) + offset, num)
            return outputs(index, score > -jnp.inf, extra)

        return jax.shard_map(
            local,
            mesh=mesh,
            in_specs=(*specs, P()),
            out_specs=out_specs,
            check_vma=False,
        )(*operands, seeds)

    chunk = 32  # with replacement: rank → word of 32 rows' bits (cumsum of popcounts) → bit in word

    def local_replace(*args):
        *local_ops, rng = args
        band, extra = split(eligible(*local_ops))
        count = jnp.sum(band, axis=1, dtype=jnp.int32)  # [B]
        counts = lax.all_gather(count, DATA_AXIS, axis=0)  # [n, B]
        device = lax.axis_index(DATA_AXIS)
        total = jnp.sum(counts, axis=0)
        start = jnp.sum(jnp.where(jnp.arange(num_devices)[:, None] < device, counts, 0), axis=0)
        rank = jax.random.randint(rng, (batch, num), 0, jnp.maximum(total, 1)[:, None])
        local_rank = rank - start[:, None]
        owned = (local_rank >= 0) & (local_rank < count[:, None])
        words = _pack_bits(band, chunk)  # [B, C] uint32, bit j of word c = row c·32 + j
        chunk_count = lax.population_count(words).astype(jnp.int32)
        chunk_end = jnp.cumsum(chunk_count, axis=1, dtype=jnp.int32)  # [B, C] band rows up to it
        which = jax.vmap(lambda c, r: jnp.searchsorted(c, r, side="left"))(
            chunk_end, local_rank + 1
        )  # first word whose inclusive cumsum reaches local_rank + 1, [B, num]
        which = jnp.minimum(which, words.shape[1] - 1)
        before = jnp.take_along_axis(chunk_end - chunk_count, which, axis=1)
        word = jnp.take_along_axis(words, which, axis=1)  # [B, num]
        offset_in_chunk = _select_bit(word, local_rank - before)
        index = which * chunk + offset_in_chunk + device.astype(jnp.int32) * per_device
        index = lax.psum(jnp.where(owned, index.astype(jnp.int32), 0), DATA_AXIS)
        return outputs(index, jnp.broadcast_to((total > 0)[:, None], (batch, num)), extra)

    return jax.shard_map(
        local_replace,
        mesh=mesh,
        in_specs=(*specs, P()),
        out_specs=out_specs,
        check_vma=False,
    )(*operands, rng)
