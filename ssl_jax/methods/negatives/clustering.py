"""InterCLR's cluster state as pure, jit-able functions on a bank sharded along its rows.

State (mmselfsup 0.x `InterCLRMemory`): a bank `[N, D]` float32 of L2-normalised features sharded
`memory.ROWS`, a label bank `[N]` int32 sharded `P('data')` and centroids `[C, D]` float32 replicated,
the UN-normalised means of each cluster's bank rows. Every function takes the mesh and runs as one
`shard_map`: each device works on its own N/n rows and only `[C]` counts, `[C, D]` sums and a few
scalars are `psum`'d, so results are the same on 1 or n devices (up to float reduction order) and the
bank is never gathered. Row-by-centroid scores (`[N/n, C]`) are computed `chunk_rows` rows at a time
(`lax.map`), never whole. Matmuls use `Precision.HIGHEST` (faiss runs the k-means in float32,
`useFloat16=False`). Ties in an argmax/argmin go to the smallest cluster id (numpy/torch order).

Official code followed (open-mmlab/mmselfsup, branch 0.x):
- `mmselfsup/utils/clustering.py` `run_kmeans`: faiss k-means, 20 iterations, init from random rows,
  final labels by `index.search(x, 1)` → `kmeans`.
- `mmselfsup/models/memories/interclr_memory.py`: `update_samples_memory` (online label = argmax of
  centroid · feature) → InterCLR's `update_buffers` (`methods/interclr.py`, on the written rows);
  `_compute_centroids` (empty clusters keep their old centroid) → `centroids_from_bank`; `deal_with_small_clusters`,
  `_redirect_empty_clusters`, `_partition_max_cluster` → `fix_small_clusters`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from ssl_jax.methods.memory import ROWS, rows_per_device
from ssl_jax.parallel.sharding import DATA_AXIS

LABELS = P(DATA_AXIS)
_HIGHEST = lax.Precision.HIGHEST
_SCORE_ELEMENTS = 1 << 24  # default chunk: rows · C ≤ 16M float32 scores (64 MB) at a time


def _check_bank(bank: jax.Array, mesh: Mesh) -> int:
    """Rows per device (raises if N does not split evenly over the mesh)."""
    return rows_per_device(bank, mesh)[1]


def _default_chunk(rows: int, num_clusters: int, chunk_rows: int | None) -> int:
    if chunk_rows is None:
        chunk_rows = max(1, _SCORE_ELEMENTS // max(num_clusters, 1))
    return max(1, min(int(chunk_rows), rows))


# --------------------------------------------------------------------------------------------------
# Per-device pieces (called inside shard_map over DATA_AXIS).


def _local_sizes(labels: jnp.ndarray, num_clusters: int) -> jnp.ndarray:
    local = jax.ops.segment_sum(jnp.ones_like(labels), labels, num_clusters)
    return lax.psum(local.astype(jnp.int32), DATA_AXIS)


def _local_means(bank: jnp.ndarray, labels: jnp.ndarray, old: jnp.ndarray) -> jnp.ndarray:
    """`_compute_centroids`: psum'd segment sums / counts; empty clusters keep `old`."""
    num_clusters = old.shape[0]
    sums = lax.psum(jax.ops.segment_sum(bank, labels, num_clusters), DATA_AXIS)
    counts = _local_sizes(labels, num_clusters)
    means = sums / jnp.maximum(counts, 1).astype(jnp.float32)[:, None]
    return jnp.where(counts[:, None] > 0, means, old)


def _l2_bias(centroids: jnp.ndarray) -> jnp.ndarray:
    """Per-centroid term added to `f · c` so that the nearest centroid (L2) is an argmax of the sum:
    argmin_c ||f − c||² = argmax_c (f · c − ||c||²/2) (||f||² is the same for every c; halving and
    negating are exact in float, so ties are those of ||c||² − 2 f·c)."""
    return -0.5 * jnp.sum(centroids * centroids, axis=1)


def _chunked_argmax(
    bank: jnp.ndarray,
    centroids: jnp.ndarray,
    bias: jnp.ndarray,
    chunk_rows: int,
    redo: jnp.ndarray | None = None,
    current: jnp.ndarray | None = None,
) -> jnp.ndarray:
    """`argmax_c (bank @ centroids.T + bias)` per row `[rows]`, `chunk_rows` rows at a time.

    With `redo` (bool `[rows]`) only those rows get a new label (the others keep `current`) and chunks
    without any such row are skipped (`lax.cond`).
    """
    rows, dim = bank.shape
    pad = -rows % chunk_rows
    blocks = jnp.pad(bank, ((0, pad), (0, 0))).reshape(-1, chunk_rows, dim)

    def best(block):
        scores = jnp.dot(block, centroids.T, precision=_HIGHEST) + bias
        return jnp.argmax(scores, axis=1).astype(jnp.int32)

    if redo is None:
        out = lax.map(best, blocks)
    else:
        current = jnp.pad(current, (0, pad)).reshape(-1, chunk_rows)
        redo = jnp.pad(redo, (0, pad)).reshape(-1, chunk_rows)

        def maybe(args):
            block, cur, red = args
            return lax.cond(jnp.any(red), lambda: jnp.where(red, best(block), cur), lambda: cur)

        out = lax.map(maybe, (blocks, current, redo))
    return out.reshape(-1)[:rows]


def _global_rows(rows: int) -> jnp.ndarray:
    return lax.axis_index(DATA_AXIS).astype(jnp.int32) * rows + jnp.arange(rows, dtype=jnp.int32)


def _row_at(bank: jnp.ndarray, global_row: jnp.ndarray) -> jnp.ndarray:
    """bank[global_row] `[..., D]` from the owning devices (masked local read + psum)."""
    rows = bank.shape[0]
    local = global_row - lax.axis_index(DATA_AXIS).astype(jnp.int32) * rows
    owned = (local >= 0) & (local < rows)
    got = bank[jnp.clip(local, 0, rows - 1)]
    return lax.psum(jnp.where(owned[..., None], got, 0.0), DATA_AXIS)


def _second_center(bank: jnp.ndarray, centers: jnp.ndarray, member: jnp.ndarray) -> jnp.ndarray:
    """bool `[rows]`: member rows nearer (Euclidean) to centers[1] than to centers[0] (tie → 0)."""
    dist = jnp.sum(centers * centers, axis=1) - 2.0 * jnp.dot(bank, centers.T, precision=_HIGHEST)
    return member & (dist[:, 1] < dist[:, 0])


def _two_sums(bank: jnp.ndarray, first: jnp.ndarray, second: jnp.ndarray):
    """psum'd (sums `[2, D]`, counts `[2]`) of the rows in `first` and in `second`."""
    weights = jnp.stack([first, second]).astype(jnp.float32)  # [2, rows]
    sums = lax.psum(jnp.dot(weights, bank, precision=_HIGHEST), DATA_AXIS)
    counts = lax.psum(jnp.sum(weights, axis=1), DATA_AXIS)
    return sums, counts


def _split_cluster(
    bank: jnp.ndarray,
    labels: jnp.ndarray,
    largest: jnp.ndarray,
    empty: jnp.ndarray,
    size: jnp.ndarray,
    split_iters: int,
):
    """`_partition_max_cluster` with a deterministic 2-means in place of sklearn's KMeans(2).

    Init: center 0 = the member with the smallest global row, center 1 = the member least similar to
    it (smallest dot product; ties → smallest global row). `split_iters` Lloyd iterations (Euclidean
    assignment, tie → center 0; a side with no member keeps its center), then a final assignment.
    Side 1 moves to `empty`. If a side is empty (e.g. identical rows), fallback: the members in
    global row order, the first ⌊size/2⌋ stay, the rest move (the code: a random ⌊size/2⌋ stay).
    Returns (labels, means `[2, D]` of (largest, empty), counts `[2]` int32).
    """
    rows = bank.shape[0]
    num_rows = rows * lax.axis_size(DATA_AXIS)
    global_rows = _global_rows(rows)
    member = labels == largest

    first_row = lax.pmin(jnp.min(jnp.where(member, global_rows, num_rows)), DATA_AXIS)
    center0 = _row_at(bank, first_row)
    sims = jnp.dot(bank, center0, precision=_HIGHEST)
    least = lax.pmin(jnp.min(jnp.where(member, sims, jnp.inf)), DATA_AXIS)
    far_row = lax.pmin(
        jnp.min(jnp.where(member & (sims == least), global_rows, num_rows)), DATA_AXIS
    )
    centers = jnp.stack([center0, _row_at(bank, far_row)])

    def lloyd(_, centers):
        second = _second_center(bank, centers, member)
        sums, counts = _two_sums(bank, member & ~second, second)
        means = sums / jnp.maximum(counts, 1.0)[:, None]
        return jnp.where(counts[:, None] > 0, means, centers)

    centers = lax.fori_loop(0, split_iters, lloyd, centers)
    second = _second_center(bank, centers, member)
    moved = lax.psum(jnp.sum(second, dtype=jnp.int32), DATA_AXIS)

    # Fallback half split by global row order: rank of each member among all members.
    local_count = jnp.sum(member, dtype=jnp.int32)
    counts = lax.all_gather(local_count, DATA_AXIS)
    before = jnp.sum(jnp.where(jnp.arange(counts.shape[0]) < lax.axis_index(DATA_AXIS), counts, 0))
    rank = before + jnp.cumsum(member, dtype=jnp.int32) - 1
    halves = member & (rank >= size // 2)
    second = jnp.where((moved == 0) | (moved == size), halves, second)

    labels = jnp.where(second, empty, labels)
    sums, counts = _two_sums(bank, member & ~second, second)
    return labels, sums / jnp.maximum(counts, 1.0)[:, None], counts.astype(jnp.int32)


def _local_fix(bank, labels, centroids, min_size, split_iters, chunk_rows):
    num_clusters = centroids.shape[0]
    sizes = _local_sizes(labels, num_clusters)
    small = sizes < min_size
    num_small = jnp.sum(small, dtype=jnp.int32)

    def fix(_):
        # deal_with_small_clusters: members of small clusters → nearest (dot) non-small centroid.
        bias = jnp.where(small, -jnp.inf, 0.0)
        moved = _chunked_argmax(bank, centroids, bias, chunk_rows, small[labels], labels)
        sizes_now = _local_sizes(moved, num_clusters)

        # _redirect_empty_clusters: each small (now empty) cluster, by id, splits the largest.
        def body(carry):
            labels, centroids, sizes, remaining, filled = carry
            empty = jnp.argmax(remaining).astype(jnp.int32)
            largest = jnp.argmax(sizes).astype(jnp.int32)

            def split(_):
                new, means, counts = _split_cluster(
                    bank, labels, largest, empty, sizes[largest], split_iters
                )
                pair = jnp.stack([largest, empty])
                return (
                    new,
                    centroids.at[pair].set(means),
                    sizes.at[pair].set(counts),
                    filled + 1,
                )

            labels, centroids, sizes, filled = lax.cond(
                sizes[largest] >= 2, split, lambda _: (labels, centroids, sizes, filled), None
            )
            return labels, centroids, sizes, remaining.at[empty].set(False), filled

        fixed_labels, fixed_centroids, fixed_sizes, _, filled = lax.while_loop(
            lambda carry: jnp.any(carry[3]),
            body,
            (moved, centroids, sizes_now, small, jnp.int32(0)),
        )
        return fixed_labels, fixed_centroids, filled, jnp.max(fixed_sizes)

    def skip(_):
        return labels, centroids, jnp.int32(0), jnp.max(sizes)

    new_labels, new_centroids, filled, largest = lax.cond(
        (num_small > 0) & (num_small < num_clusters), fix, skip, None
    )
    stats = {"num_small": num_small, "num_empty_filled": filled, "largest": largest}
    return new_labels, new_centroids, stats


# --------------------------------------------------------------------------------------------------
# Public API.


@functools.partial(jax.jit, static_argnames=("num_clusters", "mesh"))
def cluster_sizes(labels: jax.Array, num_clusters: int, mesh: Mesh) -> jax.Array:
    """`np.bincount(labels, minlength=C)` `[C]` int32, replicated: per-device counts, psum'd."""
    return jax.shard_map(
        lambda labels: _local_sizes(labels, num_clusters),
        mesh=mesh,
        in_specs=(LABELS,),
        out_specs=P(),
        check_vma=False,
    )(labels)


@functools.partial(jax.jit, static_argnames=("mesh",))
def centroids_from_bank(
    bank: jax.Array, labels: jax.Array, old_centroids: jax.Array, mesh: Mesh
) -> jax.Array:
    """`[C, D]` replicated: the mean of each cluster's bank rows; empty clusters keep their old
    centroid (`_compute_centroids`, run every 10 iterations by the code)."""
    _check_bank(bank, mesh)
    return jax.shard_map(
        _local_means, mesh=mesh, in_specs=(ROWS, LABELS, P()), out_specs=P(), check_vma=False
    )(bank, labels, old_centroids)


@functools.partial(jax.jit, static_argnames=("mesh", "min_size", "split_iters", "chunk_rows"))
def fix_small_clusters(
    bank: jax.Array,
    labels: jax.Array,
    centroids: jax.Array,
    mesh: Mesh,
    *,
    min_size: int = 20,
    split_iters: int = 20,
    chunk_rows: int | None = None,
) -> tuple[jax.Array, jax.Array, dict[str, jax.Array]]:
    """The code's `deal_with_small_clusters` → (labels, centroids, stats).

    Small = fewer than `min_size` members, EMPTY CLUSTERS INCLUDED (`histogram < min_cluster`).
    1. Members of every small cluster move to the nearest non-small centroid by dot product
       (`argmax centroids[inclusion] @ f`; tie → smallest id). No centroid is recomputed here.
    2. Each small (now empty) cluster e, in ascending id, takes the currently largest cluster L
       (`bincount.argmax()`, tie → smallest id), splits it by a deterministic 2-means (see
       `_split_cluster`; the code uses sklearn `KMeans(2, random_state=0, max_iter=20)`), moves the
       second part to e and recomputes the centroids of L and e only (`_compute_centroids_ind`).
    Where the code would fail, nothing happens: all clusters small (no target; labels and centroids
    unchanged) or a largest cluster of < 2 rows (e stays empty; not counted as filled).
    stats (int32 scalars): `num_small` (before), `num_empty_filled`, `largest` (size after).

    Cost: always one segment count of the labels (O(N/n) per device, a `[C]` psum); the rest is under
    `lax.cond` and runs only when some cluster is small: one masked pass of `[chunk, C]` scores over
    the row chunks holding small-cluster members (chunks without any are skipped), then per small
    cluster 2·split_iters + 3 masked passes over the local bank (the 2-means on the largest
    cluster's rows: `[N/n, 2]` distances and `[2, D]` sums per iteration, psum'd), i.e. about
    S · (2·split_iters + 3) · 4·N/n·D flops for S small clusters, memory-bound (seconds a split
    on CPU at N = 128,000: docs/performance.md).
    """
    rows = _check_bank(bank, mesh)
    chunk = _default_chunk(rows, centroids.shape[0], chunk_rows)

    def local(bank, labels, centroids):
        return _local_fix(bank, labels, centroids, min_size, split_iters, chunk)

    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(ROWS, LABELS, P()),
        out_specs=(LABELS, P(), P()),
        check_vma=False,
    )(bank, labels, centroids)


def kmeans_init_rows(rng: jax.Array, num_rows: int, num_clusters: int) -> jax.Array:
    """`[C]` int32: C distinct rows drawn uniformly (faiss: the first k of a random permutation)."""
    if not 1 <= num_clusters <= num_rows:
        raise ValueError(f"num_clusters={num_clusters} must be in [1, {num_rows}] (rows)")
    return jax.random.choice(rng, num_rows, (num_clusters,), replace=False).astype(jnp.int32)


@functools.partial(
    jax.jit,
    static_argnames=("num_clusters", "mesh", "iters", "min_size", "split_iters", "chunk_rows"),
)
def kmeans(
    rng: jax.Array,
    bank: jax.Array,
    num_clusters: int,
    mesh: Mesh,
    *,
    iters: int = 20,
    min_size: int = 1,
    split_iters: int = 20,
    chunk_rows: int | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Euclidean k-means of the bank rows like the code's faiss init (`run_kmeans`) → (labels `[N]`
    int32 sharded `P('data')`, centroids `[C, D]` replicated, un-normalised cluster means).

    Init: the rows `kmeans_init_rows(rng, N, C)`. `iters` Lloyd iterations: 'l2' assignment, then
    means (an empty cluster keeps its centroid; faiss instead re-seeds it from a perturbed copy of
    a large one). Then labels by the final assignment (faiss: `index.search(x, 1)`), centroids as
    their means, and `fix_small_clusters(min_size=min_size)`, which with min_size=1 fills every empty
    cluster by splitting the largest (`init_memory` asserts no empty cluster): none is left
    since C ≤ N. Cost: (iters + 1) chunked `[N/n, C]` score passes plus segment sums.
    """
    rows = _check_bank(bank, mesh)
    init_rows = kmeans_init_rows(rng, bank.shape[0], num_clusters)
    chunk = _default_chunk(rows, num_clusters, chunk_rows)

    def local(bank, init_rows):
        centroids = _row_at(bank, init_rows)

        def assign(centroids):
            return _chunked_argmax(bank, centroids, _l2_bias(centroids), chunk)

        def lloyd(_, centroids):
            return _local_means(bank, assign(centroids), centroids)

        centroids = lax.fori_loop(0, iters, lloyd, centroids)
        labels = assign(centroids)
        centroids = _local_means(bank, labels, centroids)
        labels, centroids, _ = _local_fix(bank, labels, centroids, min_size, split_iters, chunk)
        return labels, centroids

    return jax.shard_map(
        local, mesh=mesh, in_specs=(ROWS, P()), out_specs=(LABELS, P()), check_vma=False
    )(bank, init_rows)
