"""InterCLR cluster state (`ssl_jax.methods.negatives.clustering`) against numpy references written
from the official mmselfsup 0.x order of operations, on 1 and 8 simulated devices."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from ssl_jax.methods import memory
from ssl_jax.methods.negatives import clustering
from ssl_jax.parallel.sharding import make_mesh

# --------------------------------------------------------------------------------------------------
# numpy references (the official code's loops, with the documented deterministic 2-means)


def np_assign(bank, centroids, metric):
    scores = bank @ centroids.T
    if metric == "dot":  # update_samples_memory: argmax(centroids @ f)
        return np.argmax(scores, axis=1).astype(np.int32)
    dist = np.sum(centroids * centroids, axis=1) - 2.0 * scores  # faiss L2 search
    return np.argmin(dist, axis=1).astype(np.int32)


def np_means(bank, labels, old):
    out = old.copy()  # _compute_centroids: empty clusters keep their centroid
    for c in np.unique(labels):
        out[c] = bank[labels == c].mean(axis=0)
    return out


def np_second_side(feats, centers):
    dist = np.sum(centers * centers, axis=1) - 2.0 * feats @ centers.T
    return dist[:, 1] < dist[:, 0]


def np_two_means(feats, iters):
    """True for the rows that move: 2-means from (first row, least similar row), half-split fallback."""
    first = feats[0]
    centers = np.stack([first, feats[int(np.argmin(feats @ first))]])
    for _ in range(iters):
        side = np_second_side(feats, centers)
        for k, rows in enumerate([~side, side]):
            if rows.any():
                centers[k] = feats[rows].mean(axis=0)
    side = np_second_side(feats, centers)
    if side.all() or not side.any():
        side = np.arange(len(feats)) >= len(feats) // 2
    return side


def np_deal_with_small_clusters(bank, labels, centroids, min_size, split_iters):
    labels, centroids = labels.copy(), centroids.copy()
    num_clusters = len(centroids)
    small = np.where(np.bincount(labels, minlength=num_clusters) < min_size)[0]
    stats = {"num_small": len(small), "num_empty_filled": 0}
    if 0 < len(small) < num_clusters:
        inclusion = np.setdiff1d(np.arange(num_clusters), small)
        for s in small:
            ind = np.where(labels == s)[0]
            if len(ind):
                labels[ind] = inclusion[np.argmax(centroids[inclusion] @ bank[ind].T, axis=0)]
        for e in small:
            largest = np.bincount(labels, minlength=num_clusters).argmax()
            ind = np.where(labels == largest)[0]
            if len(ind) < 2:
                continue
            labels[ind[np_two_means(bank[ind], split_iters)]] = e
            for c in (largest, e):
                centroids[c] = bank[labels == c].mean(axis=0)
            stats["num_empty_filled"] += 1
    stats["largest"] = np.bincount(labels, minlength=num_clusters).max()
    return labels, centroids, stats


def np_kmeans(bank, init_rows, iters, min_size=1, split_iters=20):
    centroids = bank[init_rows].copy()
    for _ in range(iters):
        centroids = np_means(bank, np_assign(bank, centroids, "l2"), centroids)
    labels = np_assign(bank, centroids, "l2")
    centroids = np_means(bank, labels, centroids)
    labels, centroids, _ = np_deal_with_small_clusters(
        bank, labels, centroids, min_size, split_iters
    )
    return labels, centroids


# --------------------------------------------------------------------------------------------------
# helpers


def _meshes():
    return [make_mesh(jax.devices()[:1]), make_mesh(jax.devices())]


def _normalize(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _blobs(num_rows, dim, num_blobs, noise, seed):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(num_blobs, dim))
    which = rng.integers(0, num_blobs, num_rows)
    return _normalize(centers[which] + noise * rng.normal(size=(num_rows, dim)))


def _put(mesh, bank=None, labels=None):
    out = []
    if bank is not None:
        out.append(jax.device_put(jnp.asarray(bank), NamedSharding(mesh, memory.ROWS)))
    if labels is not None:
        out.append(jax.device_put(jnp.asarray(labels, jnp.int32), NamedSharding(mesh, P("data"))))
    return out


def _row_sharded(labels, mesh):
    return labels.sharding.is_equivalent_to(NamedSharding(mesh, P("data")), 1)


@functools.cache
def _fix_fn(mesh, min_size, split_iters=20, chunk_rows=None):
    return jax.jit(
        lambda b, lab, c: clustering.fix_small_clusters(
            b, lab, c, mesh, min_size=min_size, split_iters=split_iters, chunk_rows=chunk_rows
        )
    )


@functools.cache
def _kmeans_fn(mesh, num_clusters, iters):
    return jax.jit(lambda r, b: clustering.kmeans(r, b, num_clusters, mesh, iters=iters))


def _fix(mesh, bank, labels, centroids, min_size, **kw):
    b, lab = _put(mesh, bank, labels)
    new_labels, new_centroids, stats = _fix_fn(mesh, min_size, **kw)(b, lab, jnp.asarray(centroids))
    assert _row_sharded(new_labels, mesh)
    return np.asarray(new_labels), np.asarray(new_centroids), {k: int(v) for k, v in stats.items()}


# --------------------------------------------------------------------------------------------------
# tests


def test_cluster_sizes_and_centroids_keep_empty_ones():
    num_rows, dim, num_clusters = 64, 8, 6
    rng = np.random.default_rng(0)
    bank = _normalize(rng.normal(size=(num_rows, dim)))
    labels = rng.integers(0, num_clusters - 1, num_rows).astype(np.int32)  # cluster 5 empty
    old = rng.normal(size=(num_clusters, dim)).astype(np.float32)
    for mesh in _meshes():
        b, lab = _put(mesh, bank, labels)
        sizes = jax.jit(lambda lab, mesh=mesh: clustering.cluster_sizes(lab, num_clusters, mesh))(
            lab
        )
        np.testing.assert_array_equal(np.asarray(sizes), np.bincount(labels, minlength=6))
        assert sizes.dtype == jnp.int32
        cents = clustering.centroids_from_bank(b, lab, jnp.asarray(old), mesh)
        np.testing.assert_allclose(np.asarray(cents), np_means(bank, labels, old), atol=1e-6)
        np.testing.assert_array_equal(np.asarray(cents)[5], old[5])


@functools.partial(jax.jit, static_argnames=("mesh", "metric", "chunk_rows"))
def assign_labels(bank, centroids, mesh, *, metric="dot", chunk_rows=None):
    """Label of each bank row `[N]` int32 sharded `P('data')`, from the module's row-chunked argmax:
    'dot' = argmax_c centroids[c] · f, the code's online label (`update_samples_memory`,
    un-normalised centroids; InterCLR's `update_buffers` on the written rows), 'l2' = argmin_c
    ||f − centroids[c]||², the k-means assignment. Ties → smallest c; scores formed `chunk_rows` rows
    at a time (default: ≤ 16M scores per chunk)."""
    rows = clustering._check_bank(bank, mesh)
    chunk = clustering._default_chunk(rows, centroids.shape[0], chunk_rows)

    def local(bank, centroids):
        if metric == "dot":
            bias = jnp.zeros(centroids.shape[0], jnp.float32)
        else:
            bias = clustering._l2_bias(centroids)
        return clustering._chunked_argmax(bank, centroids, bias, chunk)

    return jax.shard_map(
        local, mesh=mesh, in_specs=(memory.ROWS, P()), out_specs=clustering.LABELS, check_vma=False
    )(bank, centroids)


@pytest.mark.parametrize("metric", ["dot", "l2"])
def test_assign_labels_matches_numpy_on_1_and_8_devices(metric):
    num_rows, dim, num_clusters = 64, 8, 12
    rng = np.random.default_rng(1)
    bank = _normalize(rng.normal(size=(num_rows, dim)))
    centroids = (rng.normal(size=(num_clusters, dim)) * rng.uniform(0.2, 1.5, (12, 1))).astype(
        np.float32
    )  # un-normalised: 'dot' and 'l2' disagree
    expected = np_assign(bank, centroids, metric)
    assert (expected != np_assign(bank, centroids, "l2" if metric == "dot" else "dot")).any()
    for mesh in _meshes():
        (b,) = _put(mesh, bank)
        for chunk_rows in (None, 3):  # 3: chunks of 3 rows, padded tail (8 or 64 rows/device)
            labels = assign_labels(
                b, jnp.asarray(centroids), mesh, metric=metric, chunk_rows=chunk_rows
            )
            assert _row_sharded(labels, mesh) and labels.dtype == jnp.int32
            np.testing.assert_array_equal(np.asarray(labels), expected)


def test_fix_small_clusters_is_a_noop_without_small_clusters():
    num_rows, dim, num_clusters = 64, 8, 4
    rng = np.random.default_rng(2)
    bank = _normalize(rng.normal(size=(num_rows, dim)))
    labels = np.repeat(np.arange(num_clusters), [10, 14, 20, 20]).astype(np.int32)
    centroids = np_means(bank, labels, np.zeros((num_clusters, dim), np.float32))
    mesh = make_mesh()
    new_labels, new_centroids, stats = _fix(mesh, bank, labels, centroids, min_size=10)
    np.testing.assert_array_equal(new_labels, labels)
    np.testing.assert_array_equal(new_centroids, centroids)
    assert stats == {"num_small": 0, "num_empty_filled": 0, "largest": 20}


def test_fix_small_clusters_matches_numpy_on_1_and_8_devices():
    num_rows, dim, num_clusters, min_size = 128, 8, 8, 6
    rng = np.random.default_rng(3)
    bank = _blobs(num_rows, dim, 5, 0.6, seed=3)
    sizes = [40, 30, 20, 20, 10, 5, 3, 0]  # 5, 6 small; 7 empty (counts as small)
    labels = rng.permutation(np.repeat(np.arange(num_clusters), sizes)).astype(np.int32)
    old = rng.normal(size=(num_clusters, dim)).astype(np.float32)
    centroids = np_means(bank, labels, old)
    exp_labels, exp_centroids, exp_stats = np_deal_with_small_clusters(
        bank, labels, centroids, min_size, 20
    )
    assert exp_stats == {"num_small": 3, "num_empty_filled": 3, "largest": exp_stats["largest"]}
    for mesh in _meshes():
        got_labels, got_centroids, stats = _fix(
            mesh, bank, labels, centroids, min_size, chunk_rows=5
        )
        np.testing.assert_array_equal(got_labels, exp_labels)
        np.testing.assert_allclose(got_centroids, exp_centroids, atol=1e-5)
        assert stats == {k: int(v) for k, v in exp_stats.items()}
        assert (np.bincount(got_labels, minlength=num_clusters) > 0).all()


def test_small_cluster_members_go_to_the_nearest_non_small_centroid():
    dim = 8
    eye = np.eye(dim, dtype=np.float32)
    rng = np.random.default_rng(4)
    near = lambda k, n: _normalize(eye[k] + 0.1 * rng.normal(size=(n, dim)))
    # cluster 0: 44 rows near e0 (the largest, split for the emptied cluster 3), 1: near e1,
    # 2: near e2; cluster 3 is small: one row near e1, one near e2.
    bank = np.concatenate([near(0, 44), near(1, 10), near(2, 8), near(1, 1), near(2, 1)])
    labels = np.repeat([0, 1, 2, 3], [44, 10, 8, 2]).astype(np.int32)
    centroids = np_means(bank, labels, np.zeros((4, dim), np.float32))
    got_labels, got_centroids, stats = _fix(make_mesh(), bank, labels, centroids, min_size=3)
    assert list(got_labels[62:]) == [1, 2]
    assert stats["num_small"] == 1 and stats["num_empty_filled"] == 1
    np.testing.assert_array_equal(got_centroids[1:3], centroids[1:3])  # targets keep centroids
    assert set(got_labels[:44]) == {0, 3}  # the emptied cluster took part of the largest


def test_empty_cluster_takes_one_side_of_the_largest():
    dim = 8
    eye = np.eye(dim, dtype=np.float32)
    rng = np.random.default_rng(5)
    near = lambda k, n: _normalize(eye[k] + 0.1 * rng.normal(size=(n, dim)))
    # cluster 0 = two blobs (e0 then e1, interleaved), cluster 1 near e2, cluster 2 empty
    blob_a, blob_b = near(0, 20), near(1, 20)
    bank = np.concatenate([np.stack([blob_a, blob_b], 1).reshape(40, dim), near(2, 16)])
    labels = np.repeat([0, 1], [40, 16]).astype(np.int32)
    centroids = np_means(bank, labels, np.zeros((3, dim), np.float32))
    got_labels, got_centroids, stats = _fix(make_mesh(), bank, labels, centroids, min_size=1)
    np.testing.assert_array_equal(got_labels[:40], np.tile([0, 2], 20))  # blob of row 0 stays
    np.testing.assert_allclose(got_centroids[2], bank[1:40:2].mean(0), atol=1e-6)
    np.testing.assert_allclose(got_centroids[0], bank[0:40:2].mean(0), atol=1e-6)
    assert stats == {"num_small": 1, "num_empty_filled": 1, "largest": 20}

    # identical rows: 2-means has an empty side → first ⌊size/2⌋ rows (global order) stay
    bank = np.concatenate([np.repeat(near(0, 1), 25, axis=0), near(2, 7)])
    labels = np.repeat([0, 1], [25, 7]).astype(np.int32)
    centroids = np_means(bank, labels, np.zeros((3, dim), np.float32))
    got_labels, _, stats = _fix(make_mesh(), bank, labels, centroids, min_size=1)
    np.testing.assert_array_equal(got_labels[:25], np.repeat([0, 2], [12, 13]))
    assert stats["num_empty_filled"] == 1 and stats["largest"] == 13


def test_kmeans_matches_numpy_lloyd_on_1_and_8_devices():
    num_rows, dim, num_clusters, iters = 256, 8, 8, 10
    bank = _blobs(num_rows, dim, 6, 0.5, seed=6)
    rng = jax.random.PRNGKey(7)
    init = np.asarray(clustering.kmeans_init_rows(rng, num_rows, num_clusters))
    assert len(set(init.tolist())) == num_clusters
    exp_labels, exp_centroids = np_kmeans(bank, init, iters)
    for mesh in _meshes():
        (b,) = _put(mesh, bank)
        labels, centroids = _kmeans_fn(mesh, num_clusters, iters)(rng, b)
        assert _row_sharded(labels, mesh)
        np.testing.assert_array_equal(np.asarray(labels), exp_labels)
        np.testing.assert_allclose(np.asarray(centroids), exp_centroids, atol=1e-5)


def test_kmeans_leaves_no_empty_cluster_with_duplicated_rows():
    num_rows, dim, num_clusters, iters = 64, 8, 8, 10
    distinct = _normalize(np.random.default_rng(8).normal(size=(4, dim)))
    bank = np.repeat(distinct, 16, axis=0)  # 4 distinct rows: Lloyd leaves ≥ 4 clusters empty
    rng = jax.random.PRNGKey(9)
    init = np.asarray(clustering.kmeans_init_rows(rng, num_rows, num_clusters))
    assert len(np.unique(bank[init], axis=0)) < num_clusters  # duplicated centroids: empty ones
    exp_labels, exp_centroids = np_kmeans(bank, init, iters)
    mesh = make_mesh()
    (b,) = _put(mesh, bank)
    labels, centroids = _kmeans_fn(mesh, num_clusters, iters)(rng, b)
    labels = np.asarray(labels)
    assert (np.bincount(labels, minlength=num_clusters) > 0).all()
    np.testing.assert_array_equal(labels, exp_labels)
    np.testing.assert_allclose(
        np.asarray(centroids), np_means(bank, labels, exp_centroids), atol=1e-6
    )
    np.testing.assert_allclose(np.asarray(centroids), exp_centroids, atol=1e-6)
