"""Bank primitives (`bank_search.bank_topk`, `bank_ranks.bank_quantiles`, `sample_rows_where`,
`sample_rows_in_rank_band`) against numpy on the gathered bank, on 1 and 8 simulated devices,
and the compiled HLO of each: no bank-sized collective."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from ssl_jax.methods import memory
from ssl_jax.methods.negatives import bank_ranks, bank_search
from ssl_jax.parallel.sharding import make_mesh

N, D, B = 512, 16, 6
QS = (0.0, 0.1, 0.5, 0.9, 0.99, 1.0)
# χ² upper 0.1% points (scipy.stats.chi2.ppf(0.999, df)): a uniform sampler fails 1 run in 1000.
CHI2_999 = {19: 43.82}


@pytest.fixture(scope="module", params=[1, 8], ids=["1dev", "8dev"])
def setup(request):
    mesh = make_mesh(jax.devices()[: request.param])
    bank = memory.init_rows(jax.random.PRNGKey(0), N, D, mesh)
    queries = memory.l2_normalize(jax.random.normal(jax.random.PRNGKey(1), (B, D)))
    sims = np.asarray(queries, np.float64) @ np.asarray(bank, np.float64).T  # [B, N] reference
    return mesh, bank, queries, sims


def test_bank_topk_matches_numpy(setup):
    mesh, bank, queries, sims = setup
    for k in (1, 37, N // 8 + 5, N):  # k below, above and at N/n, and the whole bank
        values, index = jax.jit(lambda b, q, k=k: bank_search.bank_topk(b, q, k, mesh))(
            bank, queries
        )
        values, index = np.asarray(values), np.asarray(index)
        assert values.shape == index.shape == (B, k) and index.dtype == np.int32
        expected = -np.sort(-sims, axis=1)[:, :k]
        np.testing.assert_allclose(values, expected, atol=1e-6)
        assert np.all(np.diff(values, axis=1) <= 0)
        for b in range(B):
            assert set(index[b]) == set(np.argsort(-sims[b], kind="stable")[:k])
        np.testing.assert_allclose(np.take_along_axis(sims, index, 1), values, atol=1e-6)


def test_bank_quantiles_match_numpy_inverted_cdf(setup):
    mesh, bank, queries, sims = setup
    got = np.asarray(jax.jit(lambda b, q: bank_ranks.bank_quantiles(b, q, QS, mesh))(bank, queries))
    expected = np.quantile(sims, QS, axis=1, method="inverted_cdf").T
    assert got.shape == (B, len(QS))
    # iters=32 is exact on the float32 similarities; numpy's differ by the float32 matmul rounding
    np.testing.assert_allclose(got, expected, atol=1e-6)
    # fewer iterations: an upper bound of the exact value
    coarse = np.asarray(
        jax.jit(lambda b, q: bank_ranks.bank_quantiles(b, q, QS, mesh, iters=20))(bank, queries)
    )
    assert np.all(coarse >= got)


def _full_bisection(bank, queries, qs, mesh):
    """The 32-step key bisection alone (`bank_ranks._local_quantile_keys`), as `bank_quantiles` ran it
    before the select path."""
    target = bank_ranks._quantile_ranks(bank.shape[0], qs)

    def local(local_bank, queries):
        keys = bank_ranks._float_to_ordered(bank_ranks.local_sims(local_bank, queries))
        return bank_ranks._ordered_to_float(bank_ranks._local_quantile_keys(keys, target, 32))

    f = jax.shard_map(local, mesh=mesh, in_specs=(memory.ROWS, P()), out_specs=P(), check_vma=False)
    return np.asarray(jax.jit(f)(bank, queries))


def test_exact_quantiles_select_equals_the_full_bisection():
    """The exact path (`_local_select`: bisection to a bracket of ≤ 128 rows, then a top-k) returns
    the float32 value bit for bit of the full 32-step key bisection, on 1 and 8 devices, with ties
    (a bank of 40 distinct rows repeated) and a concentrated distribution (rows near one direction)."""
    qs = (0.0, 0.3, 0.9, 0.99, 1.0)
    rows = N * 16  # 8,192 rows: brackets start far above the 128-row cap
    rng = np.random.default_rng(0)
    base = rng.normal(size=(40, D))
    tied = base[rng.integers(0, 40, rows)]
    near = np.ones(D) + 0.01 * rng.normal(size=(rows, D))
    queries = memory.l2_normalize(jnp.asarray(rng.normal(size=(B, D)), jnp.float32))
    for table in (tied, near, rng.normal(size=(rows, D))):
        table = np.asarray(memory.l2_normalize(jnp.asarray(table, jnp.float32)))
        out = {}
        for n in (1, 8):
            mesh = make_mesh(jax.devices()[:n])
            bank = jax.device_put(table, NamedSharding(mesh, P("data", None)))
            out[n, "select"] = np.asarray(bank_ranks.bank_quantiles(bank, queries, qs, mesh))
            out[n, "bisect"] = _full_bisection(bank, queries, qs, mesh)
        sims = np.asarray(queries) @ table.T
        expected = np.quantile(sims, qs, axis=1, method="inverted_cdf").T
        for n in (1, 8):
            np.testing.assert_allclose(out[n, "select"], expected, atol=1e-6)
            np.testing.assert_array_equal(out[n, "select"], out[n, "bisect"])
        np.testing.assert_array_equal(out[1, "select"], out[8, "select"])


@pytest.mark.parametrize("rows", [1009, 600, 60000])  # prime (padded to 128 lanes), 120, 96 lanes
def test_counter_counts_keys_at_or_below_each_midpoint(rows):
    """`bank_ranks._counter` (the bisections' counting pass in int16 lanes) = numpy's count, with the
    largest key (the padding's) among the keys and as a midpoint."""
    rng = np.random.default_rng(rows)
    keys = rng.integers(0, 2**32, size=(3, rows), dtype=np.uint32)
    keys[0, :5] = 0xFFFFFFFF
    mid = np.stack([keys[:, 7], keys[:, 11], np.full(3, 0xFFFFFFFF, np.uint32)], axis=1)
    mid[1, 0] = 0
    got = np.asarray(jax.jit(lambda k, m: bank_ranks._counter(k)(m))(keys, mid))
    expected = (keys[:, None, :] <= mid[:, :, None]).sum(-1)
    np.testing.assert_array_equal(got, expected)
    assert bank_ranks._lane_width(rows) == {1009: 128, 600: 120, 60000: 96}[rows]


def _band(sims_row, start, size):
    """lo/hi strictly between sorted neighbours: exactly `size` rows from sorted position `start`."""
    s = np.concatenate([[-2.0], np.sort(sims_row), [2.0]])
    return (s[start] + s[start + 1]) / 2, (s[start + size] + s[start + size + 1]) / 2


def _bands(sims, sizes):
    lo, hi = zip(*(_band(sims[b], (N - size) // 3, size) for b, size in enumerate(sizes)))
    return np.asarray(lo, np.float32), np.asarray(hi, np.float32)


@pytest.mark.parametrize("replace", [False, True], ids=["without", "with"])
def test_sample_rows_where_in_band_and_valid_mask(setup, replace):
    mesh, bank, queries, sims = setup
    num, sizes = 10, [0, 1, 7, 10, 40, N]
    lo, hi = _bands(sims, sizes)
    f = jax.jit(
        lambda r, b, q, lo, hi: bank_search.sample_rows_where(
            r, b, q, lo, hi, num, mesh, replace=replace
        )
    )
    for seed in range(3):
        index, valid = (np.asarray(a) for a in f(jax.random.PRNGKey(seed), bank, queries, lo, hi))
        assert index.shape == valid.shape == (B, num) and index.dtype == np.int32
        assert np.all((index >= 0) & (index < N))
        picked = np.take_along_axis(sims, index, 1)
        in_band = (picked >= lo[:, None]) & (picked <= hi[:, None])
        assert np.all(in_band[valid])
        for b, size in enumerate(sizes):
            if replace:
                assert np.all(valid[b] == (size > 0))
            else:
                np.testing.assert_array_equal(valid[b], np.arange(num) < min(size, num))
                assert len(set(index[b][valid[b]])) == min(size, num)  # no duplicates


@pytest.mark.parametrize("replace", [False, True], ids=["without", "with"])
def test_sample_rows_where_is_uniform(setup, replace):
    """2000 draws from a 20-row band (200 copies of one query × 10 draws): χ² over the 20 rows."""
    mesh, bank, queries, sims = setup
    copies, num, size = 200, 10, 20
    q = jnp.repeat(queries[:1], copies, axis=0)
    lo, hi = _band(sims[0], 300, size)
    lo, hi = np.full(copies, lo, np.float32), np.full(copies, hi, np.float32)
    band_rows = np.flatnonzero((sims[0] >= lo[0]) & (sims[0] <= hi[0]))
    assert len(band_rows) == size
    index, valid = jax.jit(
        lambda r, b, q: bank_search.sample_rows_where(r, b, q, lo, hi, num, mesh, replace=replace)
    )(jax.random.PRNGKey(7), bank, q)
    index, valid = np.asarray(index), np.asarray(valid)
    assert valid.all() and np.isin(index, band_rows).all()
    counts = np.array([(index == r).sum() for r in band_rows])
    expected = copies * num / size
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < CHI2_999[size - 1], (chi2, counts)


def test_sample_rows_where_with_replacement_draws_the_ranked_band_row(setup):
    """With replacement, draw j of query b is the band's row of rank r (0-based, in row order) for
    r = `randint(rng, [B, num], 0, band size)`: numpy's `flatnonzero(band[b])[r]`, on 1 and 8
    devices, with bands of 1 row, of rows across word ends and of the whole bank."""
    mesh, bank, queries, sims = setup
    num, sizes = 300, [1, 33, 64, 97, 250, N]
    lo, hi = _bands(sims, sizes)
    rng = jax.random.PRNGKey(11)
    index, valid = (
        np.asarray(a)
        for a in jax.jit(
            lambda r, b, q: bank_search.sample_rows_where(r, b, q, lo, hi, num, mesh, replace=True)
        )(rng, bank, queries)
    )
    assert valid.all()
    rank = np.asarray(jax.random.randint(rng, (B, num), 0, np.asarray(sizes)[:, None]))
    for b in range(B):
        band_rows = np.flatnonzero((sims[b] >= lo[b]) & (sims[b] <= hi[b]))
        assert len(band_rows) == sizes[b]
        np.testing.assert_array_equal(index[b], band_rows[rank[b]])


def test_select_bit_finds_the_set_bit_of_each_rank():
    """`_select_bit` (five halvings on population counts) against numpy's list of set bits, and
    `_pack_bits` against numpy's bit order, on random words, 0, all ones and one-bit words."""
    rng = np.random.default_rng(0)
    mask = rng.random((3, 200)) < np.array([[0.05], [0.5], [0.95]])
    mask[0, 96:128] = True  # an all-ones word
    mask[0, 128:160] = False  # an empty word
    mask[1, 160:192] = np.arange(32) == 31  # the top bit alone
    words = np.asarray(bank_search._pack_bits(jnp.asarray(mask)))
    assert words.shape == (3, 7) and words.dtype == np.uint32
    padded = np.pad(mask, ((0, 0), (0, 24))).reshape(3, 7, 32)
    np.testing.assert_array_equal(words, (padded * (1 << np.arange(32, dtype=np.uint64))).sum(-1))
    flat = words.reshape(-1)
    set_bits = [np.flatnonzero((int(w) >> np.arange(32)) & 1) for w in flat]
    which = np.array([i for i, bits in enumerate(set_bits) for _ in bits])
    rank = np.array([r for bits in set_bits for r in range(len(bits))])
    got = np.asarray(bank_search._select_bit(jnp.asarray(flat[which]), jnp.asarray(rank)))
    np.testing.assert_array_equal(got, np.concatenate(set_bits))


def test_sample_rows_where_does_not_depend_on_device_count():
    banks, out = {}, {}
    queries = memory.l2_normalize(jax.random.normal(jax.random.PRNGKey(1), (B, D)))
    lo, hi = jnp.full((B,), -0.2), jnp.full((B,), 0.3)
    for n in (1, 8):
        mesh = make_mesh(jax.devices()[:n])
        banks[n] = memory.init_rows(jax.random.PRNGKey(0), N, D, mesh)
        for replace in (False, True):
            out[n, replace] = np.asarray(
                bank_search.sample_rows_where(
                    jax.random.PRNGKey(3), banks[n], queries, lo, hi, 16, mesh, replace=replace
                )[0]
            )
    for replace in (False, True):
        np.testing.assert_array_equal(out[1, replace], out[8, replace])


def test_sample_rows_in_rank_band_equals_quantiles_then_sample():
    """The fused sampler, given the quantiles' ranks, draws exactly what `bank_quantiles` +
    `sample_rows_where` draw (a one-sided band with the label filter, a two-sided one without), on
    8 devices, and its bounds are the quantiles (∓inf at an open end). Without replacement only:
    both share `_sample_eligible`, whose replace=True path `sample_rows_where`'s tests cover."""
    replace = False
    mesh = make_mesh(jax.devices()[:8])
    bank = memory.init_rows(jax.random.PRNGKey(0), N, D, mesh)
    queries = memory.l2_normalize(jax.random.normal(jax.random.PRNGKey(1), (B, D)))
    labels = jax.device_put(jnp.arange(N, dtype=jnp.int32) % 5, NamedSharding(mesh, P("data")))
    filt = dict(labels=labels, query_labels=jnp.arange(B, dtype=jnp.int32) % 5)
    rng = jax.random.PRNGKey(4)
    for q_lo, q_hi, extra in ((0.8, None, filt), (0.3, 0.7, {})):
        ends = [q for q in (q_lo, q_hi) if q is not None]
        at = bank_ranks.bank_quantiles(bank, queries, tuple(ends), mesh)
        lo = at[:, 0] if q_lo is not None else jnp.full((B,), -jnp.inf)
        hi = at[:, -1] if q_hi is not None else jnp.full((B,), jnp.inf)
        want = bank_search.sample_rows_where(
            rng, bank, queries, lo, hi, 24, mesh, replace=replace, **extra
        )
        ranks = tuple(
            None if q is None else bank_ranks._inverted_cdf_rank(N, q) for q in (q_lo, q_hi)
        )
        got = bank_search.sample_rows_in_rank_band(
            rng, bank, queries, ranks, 24, mesh, replace=replace, **extra
        )
        np.testing.assert_array_equal(np.asarray(got[2]), np.stack([lo, hi], 1))
        got = got[:2]
        for w, g in zip(want, got):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        assert np.asarray(got[1]).any()


# --------------------------------------------------------------------------------------------------
# Compiled HLO on 8 devices: every collective moves fewer than N·D/8 elements (one device's shard).

HLO_N, HLO_D = 4096, 32
COLLECTIVE = re.compile(
    r"=\s*(.*?)\s(all-gather|all-to-all|all-reduce|reduce-scatter|collective-permute)(-start)?\("
)
SHAPE = re.compile(r"\b(?:pred|[subf]\d+|bf16)\[([\d,]*)\]")


def _collective_sizes(hlo: str) -> list[int]:
    """Element counts of every array produced by a collective op in compiled HLO text."""
    sizes = []
    for line in hlo.splitlines():
        match = COLLECTIVE.search(line)
        if match:
            for dims in SHAPE.findall(match.group(1)):
                sizes.append(int(np.prod([int(d) for d in dims.split(",") if d])))
    return sizes


def _largest_collective(f, *args) -> int:
    sizes = _collective_sizes(jax.jit(f).lower(*args).compile().as_text())
    return max(sizes, default=0)


@pytest.fixture(scope="module")
def big():
    mesh = make_mesh()
    assert mesh.size == 8
    bank = memory.init_rows(jax.random.PRNGKey(0), HLO_N, HLO_D, mesh)
    queries = memory.l2_normalize(jax.random.normal(jax.random.PRNGKey(1), (B, HLO_D)))
    return mesh, bank, queries


LIMIT = HLO_N * HLO_D // 8


def test_hlo_parser_flags_a_gathered_bank(big):
    mesh, bank, queries = big
    replicated = NamedSharding(mesh, P())
    gather = lambda b, q: jax.lax.with_sharding_constraint(b, replicated) * 2.0
    assert _largest_collective(gather, bank, queries) == HLO_N * HLO_D
    naive_topk = lambda b, q: jax.lax.top_k(q @ b.T, 16)  # gathers the [B, N] similarities
    assert _largest_collective(naive_topk, bank, queries) >= LIMIT


@pytest.mark.parametrize(
    "primitive", ["topk", "quantiles", "sample", "sample_replace", "rank_band"]
)
def test_hlo_has_no_bank_sized_collective(big, primitive):
    mesh, bank, queries = big
    lo, hi = jnp.full((B,), 0.1), jnp.full((B,), 0.5)
    rng = jax.random.PRNGKey(0)
    f = {
        "topk": lambda b, q: bank_search.bank_topk(b, q, 64, mesh),
        "quantiles": lambda b, q: bank_ranks.bank_quantiles(b, q, (0.9, 0.99), mesh),
        "sample": lambda b, q: bank_search.sample_rows_where(
            rng, b, q, lo, hi, 64, mesh, replace=False
        ),
        "sample_replace": lambda b, q: bank_search.sample_rows_where(
            rng, b, q, lo, hi, 64, mesh, replace=True
        ),
        "rank_band": lambda b, q: bank_search.sample_rows_in_rank_band(
            rng, b, q, (bank_ranks._inverted_cdf_rank(HLO_N, 0.9), None), 64, mesh, replace=False
        ),
    }[primitive]
    hlo = jax.jit(f).lower(bank, queries).compile().as_text()
    sizes = _collective_sizes(hlo)
    assert sizes, "expected the merge/count collectives in the HLO"
    assert max(sizes) < LIMIT, sizes
