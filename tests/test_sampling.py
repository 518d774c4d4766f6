"""InterCLR samplers (`ssl_jax.methods.negatives.sampling`) and the label filter of the bank primitives, against numpy
references built from `np.argsort` of the similarities of the gathered bank: exact label filters,
χ² uniformity, `hard` = numpy top-num, agreement with a numpy simulation of the official rejection
redraw, valid masks, 1 vs 8 devices."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from ssl_jax.methods import memory
from ssl_jax.methods.negatives import bank_search, sampling
from ssl_jax.parallel.sharding import make_mesh

N, D, B, CLUSTERS = 256, 8, 6, 6
P_MIN = 1e-3  # a correct sampler fails a χ² test 1 run in 1000 (fixed seeds: deterministic)


def _labels(seed=5):
    labels = np.random.default_rng(seed).integers(0, CLUSTERS, N).astype(np.int32)
    assert (np.bincount(labels, minlength=CLUSTERS) > 0).all()
    return labels


@pytest.fixture(scope="module", params=[1, 8], ids=["1dev", "8dev"])
def setup(request):
    mesh = make_mesh(jax.devices()[: request.param])
    bank = memory.init_rows(jax.random.PRNGKey(0), N, D, mesh)
    labels_np = _labels()
    labels = jax.device_put(
        labels_np, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
    )
    queries = memory.l2_normalize(jax.random.normal(jax.random.PRNGKey(1), (B, D)))
    query_labels = np.arange(B, dtype=np.int32) % CLUSTERS
    sims = np.asarray(queries, np.float64) @ np.asarray(bank, np.float64).T  # [B, N]
    return mesh, bank, labels, labels_np, queries, query_labels, sims


def _pool(sims_row, sampler, pool_size):
    """Rows of the official pool: top / bottom pool_size by similarity (np.argsort)."""
    order = np.argsort(-sims_row if sampler == "semihard" else sims_row, kind="stable")
    return order[:pool_size] if sampler in ("semihard", "semieasy") else order


def _eligible(sims_row, labels_np, label, sampler, pool_size):
    pool = _pool(sims_row, sampler, pool_size)
    return np.sort(pool[labels_np[pool] != label])


def _chi2_uniform(index, rows):
    """p-value of 'index draws are uniform over rows' (all draws must lie in rows)."""
    assert np.isin(index, rows).all()
    counts = np.array([(index == r).sum() for r in rows])
    return stats.chisquare(counts).pvalue


# --------------------------------------------------------------------------------------------------
# The label filter of the primitives


def test_label_filter_is_exact(setup):
    mesh, bank, labels, labels_np, queries, qlab, sims = setup
    rng = jax.random.PRNGKey(4)
    lo, hi = jnp.full((B,), -0.3), jnp.full((B,), 0.6)
    for rule in ("exclude", "only"):
        ok = (
            (labels_np[None, :] != qlab[:, None])
            if rule == "exclude"
            else (labels_np[None, :] == qlab[:, None])
        )
        filt = dict(labels=labels, query_labels=qlab, label_rule=rule)
        band = (sims >= -0.3) & (sims <= 0.6) & ok
        for replace in (False, True):
            index, valid = (
                np.asarray(a)
                for a in bank_search.sample_rows_where(
                    rng, bank, queries, lo, hi, 40, mesh, replace=replace, **filt
                )
            )
            assert np.take_along_axis(band, index, 1)[valid].all()
            if not replace:
                for b in range(B):
                    np.testing.assert_array_equal(valid[b], np.arange(40) < band[b].sum())
            index, valid = (
                np.asarray(a)
                for a in bank_search.sample_rows_by_label(
                    rng, labels, qlab, 40, mesh, replace=replace, label_rule=rule
                )
            )
            assert valid.all() and np.take_along_axis(ok, index, 1).all()
        values, index = (
            np.asarray(a) for a in bank_search.bank_topk(bank, queries, 60, mesh, **filt)
        )
        masked = np.where(ok, sims, -np.inf)
        valid = values > -np.inf
        for b in range(B):
            np.testing.assert_array_equal(valid[b], np.arange(60) < ok[b].sum())
            top = np.argsort(-masked[b], kind="stable")[: valid[b].sum()]
            np.testing.assert_array_equal(index[b][valid[b]], top)
        np.testing.assert_allclose(
            values[valid], np.take_along_axis(sims, index, 1)[valid], atol=1e-6
        )


def test_label_filter_matching_nothing_changes_nothing(setup):
    """'exclude' with labels no query has: bit-identical to the unfiltered primitive."""
    mesh, bank, labels, _, queries, _, _ = setup
    none = np.full(B, -1, np.int32)
    filt = dict(labels=labels, query_labels=none)
    rng, lo, hi = jax.random.PRNGKey(2), jnp.full((B,), -0.3), jnp.full((B,), 0.6)
    for replace in (False, True):
        a = bank_search.sample_rows_where(rng, bank, queries, lo, hi, 16, mesh, replace=replace)
        b = bank_search.sample_rows_where(
            rng, bank, queries, lo, hi, 16, mesh, replace=replace, **filt
        )
        for x, y in zip(a, b):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    a, b = (
        bank_search.bank_topk(bank, queries, 50, mesh),
        bank_search.bank_topk(bank, queries, 50, mesh, **filt),
    )
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# --------------------------------------------------------------------------------------------------
# inter_negatives / cluster_positive


@pytest.mark.parametrize("sampler", sampling.SAMPLERS)
def test_inter_negatives_eligible_and_valid(setup, sampler):
    """No same-cluster row; within the pool; valid False exactly where the eligible set < num."""
    mesh, bank, labels, labels_np, queries, qlab, sims = setup
    pool_size = 24 if sampler in ("semihard", "semieasy") else N
    num = 22  # > |pool minus same-cluster| for most queries of the 24-row pools
    index, valid = jax.jit(
        lambda r, bk, lb, q, ql: sampling.inter_negatives(
            r, sampler, bk, lb, q, ql, num, pool_size, mesh
        )
    )(jax.random.PRNGKey(9), bank, labels, queries, qlab)
    index, valid = np.asarray(index), np.asarray(valid)
    assert index.shape == valid.shape == (B, num) and index.dtype == np.int32
    for b in range(B):
        eligible = _eligible(sims[b], labels_np, qlab[b], sampler, pool_size)
        assert np.isin(index[b][valid[b]], eligible).all()
        if sampler == "random":
            assert valid[b].all()
        else:
            np.testing.assert_array_equal(valid[b], np.arange(num) < len(eligible))
            assert len(set(index[b][valid[b]])) == valid[b].sum()  # without replacement
        if sampler == "hard":
            masked = np.where(labels_np != qlab[b], sims[b], -np.inf)
            top = np.argsort(-masked, kind="stable")[:num]
            np.testing.assert_array_equal(index[b], top)
    assert not valid.all() or sampler in ("hard", "random")  # the 24-row pools are too small


def test_random_with_no_eligible_row_is_invalid():
    mesh = make_mesh()
    bank = memory.init_rows(jax.random.PRNGKey(0), N, D, mesh)
    labels = jnp.zeros(N, jnp.int32)
    queries = memory.l2_normalize(jax.random.normal(jax.random.PRNGKey(1), (B, D)))
    qlab = jnp.zeros(B, jnp.int32).at[0].set(1)  # query 0: every row is eligible
    for sampler in sampling.SAMPLERS:
        _, valid = sampling.inter_negatives(
            jax.random.PRNGKey(0), sampler, bank, labels, queries, qlab, 8, 32, mesh
        )
        valid = np.asarray(valid)
        assert valid[0].all() and not valid[1:].any(), sampler


COPIES = 400  # one query repeated: independent draws per copy


@pytest.mark.parametrize("sampler", ["semihard", "semieasy", "random"])
def test_inter_negatives_are_uniform(setup, sampler):
    mesh, bank, labels, labels_np, queries, _, sims = setup
    pool_size, num = 40, 8
    q = jnp.repeat(queries[:1], COPIES, axis=0)
    label = int(labels_np[np.argsort(-sims[0])[0]])  # the nearest row's cluster: some same-cluster
    ql = np.full(COPIES, label, np.int32)
    index, valid = jax.jit(
        lambda r, bk, lb, q, ql: sampling.inter_negatives(
            r, sampler, bk, lb, q, ql, num, pool_size, mesh
        )
    )(jax.random.PRNGKey(11), bank, labels, q, ql)
    assert np.asarray(valid).all()
    eligible = _eligible(sims[0], labels_np, label, sampler, pool_size)
    assert len(eligible) < (pool_size if sampler != "random" else N)
    p = _chi2_uniform(np.asarray(index), eligible)
    assert p > P_MIN, p


def test_cluster_positive_is_uniform_over_own_cluster(setup):
    mesh, _, labels, labels_np, _, _, _ = setup
    copies = 2000
    for label in (0, 3):
        ql = np.full(copies, label, np.int32)
        index = np.asarray(
            jax.jit(lambda r, lb, ql: sampling.cluster_positive(r, lb, ql, mesh))(
                jax.random.PRNGKey(label), labels, ql
            )
        )
        assert index.shape == (copies,) and index.dtype == np.int32
        p = _chi2_uniform(index, np.flatnonzero(labels_np == label))
        assert p > P_MIN, p


def _official_semihard(rng, sims_row, labels_np, label, pool_size, num):
    """numpy transcription of the official loop: a uniform ordered num-subset of the top-pool_size
    (torch.multinomial without replacement), offending positions take the entry at the same
    position of a fresh subset until no draw shares the query's label."""
    pool = np.argsort(-sims_row)[:pool_size]
    draw = pool[rng.permutation(pool_size)[:num]]
    while True:
        bad = labels_np[draw] == label
        if not bad.any():
            return draw
        draw[bad] = pool[rng.permutation(pool_size)[:num]][bad]


def _official_random(rng, labels_np, label, num):
    """Official `random`: i.i.d. uniform over the bank (alias sampler), offenders redrawn i.i.d."""
    draw = rng.integers(0, N, num)
    while True:
        bad = labels_np[draw] == label
        if not bad.any():
            return draw
        draw[bad] = rng.integers(0, N, bad.sum())


@pytest.mark.parametrize("sampler", ["semihard", "random"])
def test_matches_simulated_official_redraw(setup, sampler):
    """Per-row draw counts of ours vs the numpy official simulation: χ² homogeneity test."""
    mesh, bank, labels, labels_np, queries, _, sims = setup
    pool_size, num = 40, 8
    q = jnp.repeat(queries[:1], COPIES, axis=0)
    label = int(labels_np[np.argsort(-sims[0])[0]])
    ql = np.full(COPIES, label, np.int32)
    ours = np.asarray(
        sampling.inter_negatives(
            jax.random.PRNGKey(13), sampler, bank, labels, q, ql, num, pool_size, mesh
        )[0]
    )
    rng = np.random.default_rng(0)
    if sampler == "semihard":
        sim = [
            _official_semihard(rng, sims[0], labels_np, label, pool_size, num)
            for _ in range(COPIES)
        ]
    else:
        sim = [_official_random(rng, labels_np, label, num) for _ in range(COPIES)]
    sim = np.stack(sim)
    eligible = _eligible(sims[0], labels_np, label, sampler, pool_size)
    assert np.isin(sim, eligible).all() and np.isin(ours, eligible).all()
    table = np.array([[(x == r).sum() for r in eligible] for x in (ours, sim)])
    p = stats.chi2_contingency(table).pvalue
    assert p > P_MIN, p


def test_samplers_do_not_depend_on_device_count():
    labels_np = _labels()
    queries = memory.l2_normalize(jax.random.normal(jax.random.PRNGKey(1), (B, D)))
    qlab = np.arange(B, dtype=np.int32) % CLUSTERS
    out = {}
    for n in (1, 8):
        mesh = make_mesh(jax.devices()[:n])
        bank = memory.init_rows(jax.random.PRNGKey(0), N, D, mesh)
        labels = jax.device_put(
            labels_np, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("data"))
        )
        for sampler in sampling.SAMPLERS:
            out[n, sampler] = np.asarray(
                sampling.inter_negatives(
                    jax.random.PRNGKey(3), sampler, bank, labels, queries, qlab, 16, 48, mesh
                )[0]
            )
        out[n, "positive"] = np.asarray(
            sampling.cluster_positive(jax.random.PRNGKey(3), labels, qlab, mesh)
        )
    for key in (*sampling.SAMPLERS, "positive"):
        np.testing.assert_array_equal(out[1, key], out[8, key])
