"""Ring / CNCE selection, losses and annealing schedules against numpy references written from the
official code's order of operations (mhw32/contrastive-ring-public @fb3e1c2:
`src/objectives/{instdisc,moco}.py`, `src/utils/policy.py`):

```
all  = q·bankᵀ/τ  (or q·queueᵀ/τ)                       # per anchor, sorted DESCENDING
ring = sorted[:, int(inner·int(outer·N)) : int(outer·N)]
IRing:    L = −mean(pos − logsumexp([pos, ring[draws]]))     # draws: k − 1 uniform positions
MoCoRing: L = −mean(pos − logsumexp([pos, ring]))            # all of the ring
```
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding

from ssl_jax.methods import losses, memory
from ssl_jax.methods.negatives import bank_ranks, bank_search, sampling
from ssl_jax.parallel import sharding
from tests.helpers import np_normalize
from tests.methods import references

TAU = 0.07


def np_lse(x):
    m = x.max(axis=1, keepdims=True)
    return m[:, 0] + np.log(np.exp(x - m).sum(axis=1))


def np_ring(sims, outer, inner):
    """The code: `torch.topk(all, int(outer·N))` then drop `int(inner·outer_size)` from the top."""
    n = sims.shape[1]
    outer_size = int(outer * n)
    top = -np.sort(-sims, axis=1)[:, :outer_size]
    return top[:, int(inner * outer_size) :]


def np_moco_ring(q, k, queue, tau, outer, inner):
    q, k = np_normalize(q), np_normalize(k)
    pos = (q * k).sum(1) / tau
    ring = np_ring(q @ np.asarray(queue, np.float64).T / tau, outer, inner)
    return float(-np.mean(pos - np_lse(np.concatenate([pos[:, None], ring], 1))))


def np_iring(q, bank, idx, tau, outer, inner, draws):
    q, bank = np_normalize(q), np.asarray(bank, np.float64)
    pos = (q * bank[idx]).sum(1) / tau
    ring = np_ring(q @ bank.T / tau, outer, inner)
    neg = np.take_along_axis(ring, draws, axis=1)
    return float(-np.mean(pos - np_lse(np.concatenate([pos[:, None], neg], 1))))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    n, d, b = 512, 16, 8
    return dict(
        q=rng.normal(size=(b, d)).astype(np.float32),
        k=rng.normal(size=(b, d)).astype(np.float32),
        bank=np_normalize(rng.normal(size=(n, d))).astype(np.float32),
        idx=rng.permutation(n)[:b].astype(np.int32),
    )


# --------------------------------------------------------------------------------------------------
# Percentiles ↔ fractions, positions


def test_percentile_mapping_and_inverse():
    assert references.ring_percentiles(0.1, 0.1) == pytest.approx((90.0, 99.0))
    assert references.ring_percentiles(1.0, 0.1) == pytest.approx((0.0, 90.0))  # annealing start
    assert references.ring_percentiles(0.1, 0.0) == pytest.approx((90.0, 100.0))  # the ball
    for outer, inner in [(0.1, 0.1), (0.5, 0.3), (1.0, 0.0), (0.25, 0.9)]:
        back = references.ring_fractions(*references.ring_percentiles(outer, inner))
        assert back == pytest.approx((outer, inner))
    assert references.ring_fractions(90.0, 99.0) == pytest.approx((0.1, 0.1))
    with pytest.raises(ValueError, match="w_l < w_u"):
        references.ring_fractions(99.0, 90.0)


def test_ring_positions():
    # MoCoRing K = 65,536: 5,898 ring entries (`moco.py` `MoCoRing`); static ints for Python fractions
    assert losses.ring_positions(65536, 0.1, 0.1) == (655, 6553)
    assert losses.ring_positions(50000, 0.1, 0.1) == (500, 5000)
    assert losses.ring_positions(4096, 0.1, 0.0) == (0, 409)
    start, stop = losses.ring_positions(65536, jnp.float32(0.1), jnp.float32(0.1))
    assert (int(start), int(stop)) == (655, 6553)
    ranks = np.asarray(sampling.ring_ranks(100, 0.3, 0.2))  # positions 6 … 29 → ranks 71 … 94
    np.testing.assert_array_equal(ranks, [71, 94])


# --------------------------------------------------------------------------------------------------
# Losses against numpy


@pytest.mark.parametrize("outer, inner", [(0.1, 0.1), (0.3, 0.2), (1.0, 0.1), (0.1, 0.0)])
def test_moco_ring(data, outer, inner):
    queue = data["bank"]
    got = float(references.moco_ring(data["q"], data["k"], queue, TAU, outer, inner))
    np.testing.assert_allclose(
        got, np_moco_ring(data["q"], data["k"], queue, TAU, outer, inner), rtol=1e-5
    )
    # traced outer with a wider static top-k (annealing): the same value
    traced = jax.jit(
        lambda o: references.moco_ring(data["q"], data["k"], queue, TAU, o, inner, 1.0)
    )
    np.testing.assert_allclose(float(traced(jnp.float32(outer))), got, rtol=1e-5)


def test_moco_ring_ball_and_all_outer_are_infonce_limits(data):
    """outer = 1, inner = 0: the ring is the whole queue, i.e. MoCo's InfoNCE."""
    q, k, queue = losses.l2_normalize(data["q"]), losses.l2_normalize(data["k"]), data["bank"]
    got = references.moco_ring(data["q"], data["k"], queue, TAU, 1.0, 0.0)
    np.testing.assert_allclose(float(got), float(losses.info_nce(q, k, queue, TAU)), rtol=1e-5)


@pytest.mark.parametrize("outer, inner", [(0.1, 0.1), (0.5, 0.3), (0.1, 0.0)])
def test_iring_nce(data, outer, inner):
    start, stop = losses.ring_positions(data["bank"].shape[0], outer, inner)
    draws = np.random.default_rng(1).integers(0, stop - start, size=(8, 100))
    got = references.iring_nce(data["q"], data["bank"], data["idx"], TAU, outer, inner, draws)
    want = np_iring(data["q"], data["bank"], data["idx"], TAU, outer, inner, draws)
    np.testing.assert_allclose(float(got), want, rtol=1e-5)


def test_ring_losses_gradient_only_through_query(data):
    bank = jnp.asarray(data["bank"])
    g_bank = jax.grad(lambda b: references.moco_ring(data["q"], data["k"], b, TAU, 0.1, 0.1))(bank)
    draws = np.zeros((8, 4), np.int32)
    g_bank2 = jax.grad(
        lambda b: references.iring_nce(data["q"], b, data["idx"], TAU, 0.1, 0.1, draws)
    )(bank)
    assert not np.any(g_bank) and not np.any(g_bank2)
    g_q = jax.grad(lambda q: references.moco_ring(q, data["k"], bank, TAU, 0.1, 0.1))(data["q"])
    assert np.all(np.isfinite(g_q)) and np.any(g_q)


# --------------------------------------------------------------------------------------------------
# The sharded ring sampler: the rows lie exactly in the ring, 1 = 8 devices, uniform, = iring_nce


@pytest.fixture(scope="module")
def sampled(data):
    q = np.asarray(losses.l2_normalize(data["q"]))
    out = {}
    for n in (1, 8):
        mesh = sharding.make_mesh(jax.devices()[:n])
        bank = jax.device_put(data["bank"], NamedSharding(mesh, memory.ROWS))
        for outer in (0.3, jnp.float32(0.3)):
            index, bounds = sampling.ring_negatives(
                jax.random.PRNGKey(3), bank, q, outer, 0.2, 4095, mesh
            )
            out[n, isinstance(outer, float)] = (np.asarray(index), np.asarray(bounds))
    return dict(q=q, out=out)


def test_ring_negatives_lie_in_the_ring_and_match_devices(data, sampled):
    q, bank = sampled["q"], data["bank"].astype(np.float64)
    sims = q @ bank.T
    position = np.argsort(np.argsort(-sims, axis=1, kind="stable"), axis=1)  # descending rank
    start, stop = losses.ring_positions(bank.shape[0], 0.3, 0.2)
    index, bounds = sampled["out"][1, True]
    for key, (other, other_bounds) in sampled["out"].items():
        np.testing.assert_array_equal(other, index, err_msg=str(key))
        np.testing.assert_array_equal(other_bounds, bounds, err_msg=str(key))
    drawn = np.take_along_axis(position, index, axis=1)
    assert drawn.min() >= start and drawn.max() < stop
    # uniform over the ring's stop − start rows: every row drawn, χ² small (4095 draws / 138 rows)
    ordered = -np.sort(-sims, axis=1)
    np.testing.assert_allclose(bounds[:, 0], ordered[:, stop - 1], atol=1e-6)
    np.testing.assert_allclose(bounds[:, 1], ordered[:, start], atol=1e-6)
    size = stop - start
    for row in drawn - start:
        counts = np.bincount(row, minlength=size)
        expected = row.size / size
        assert counts.min() > 0
        assert np.sum((counts - expected) ** 2 / expected) < 2 * size


def test_sampled_ring_loss_equals_iring_nce(data, sampled):
    """The methods' form (`ir_nce` on q·bank[[idx, drawn rows]]) = `iring_nce` with the drawn
    rows' ring positions as draws."""
    q, bank, idx = sampled["q"], data["bank"], data["idx"]
    index, _ = sampled["out"][8, True]
    sims = q.astype(np.float64) @ bank.astype(np.float64).T
    position = np.argsort(np.argsort(-sims, axis=1, kind="stable"), axis=1)
    start, _ = losses.ring_positions(bank.shape[0], 0.3, 0.2)
    draws = np.take_along_axis(position, index, axis=1) - start
    cols = np.concatenate([idx[:, None], index], axis=1)
    method_form = losses.ir_nce(np.take_along_axis(q @ bank.T, cols, axis=1), TAU)
    reference = references.iring_nce(q, bank, idx, TAU, 0.3, 0.2, draws)
    np.testing.assert_allclose(float(method_form), float(reference), rtol=1e-5)


# --------------------------------------------------------------------------------------------------
# Annealing schedules against the code's policies (`src/utils/policy.py`)


def np_schedule(anneal, total, n, init=1.0, final=0.1):
    if anneal == "linear":  # LinearThresholdPolicy
        return np.concatenate([np.linspace(final, init, n)[::-1], np.ones(total - n + 1) * final])
    if anneal == "step":  # StepThresholdPolicy
        s = np.arange(final, init + 0.1, 0.1)[::-1]
        s = np.repeat(s, int(n / len(s)))
        return np.concatenate([s, np.ones(total - n + 1) * final])
    s = (init - final) * np.exp(-0.1 * np.arange(n)) + final  # ExponentialDecayThresholdPolicy
    return np.concatenate([s, np.ones(total - n + 1) * final])


@pytest.mark.parametrize("anneal", ["linear", "step", "exponential"])
@pytest.mark.parametrize("n", [100, 57])
def test_step_schedules_match_the_code(anneal, n):
    total = 150
    want = np_schedule(anneal, total, n)
    fn = jax.jit(lambda s: sampling.ring_outer_schedule(anneal, s, outer=0.1, anneal_steps=n))
    got = np.asarray([fn(s) for s in range(len(want))])
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert float(fn(10_000)) == pytest.approx(0.1)
    c = sampling.ring_outer_schedule("constant", 5, outer=0.25, anneal_steps=n)
    assert float(c) == 0.25


class AdaptiveThresholdPolicy:  # the code's, verbatim in behaviour
    def __init__(self, lower_is_better, init, low, high, delta, window):
        self.thres, self.low, self.high = init, low, high
        self.delta, self.window, self.lower = delta, window, lower_is_better
        self.metrics = []

    def record(self, metric):
        record = np.mean(self.metrics[-self.window :]) if self.metrics else np.nan
        if metric > record:
            self.thres += self.delta if self.lower else -self.delta
        elif metric < record:
            self.thres += -self.delta if self.lower else self.delta
        self.thres = min(self.high, max(self.low, self.thres))
        self.metrics.append(metric)


def test_adaptive_loss_schedule_matches_the_code():
    rng = np.random.default_rng(0)
    losses_seq = np.concatenate([5.0 - 0.02 * np.arange(60), 4.0 + rng.normal(0, 0.1, 60)])
    losses_seq = losses_seq.astype(np.float32)
    policy = AdaptiveThresholdPolicy(True, 1.0, 0.1, 1.0, 0.01, 10)
    state = sampling.adaptive_outer_init(1.0, 10)
    update = jax.jit(
        lambda s, m: sampling.adaptive_outer_update(s, m, delta=0.01, lower_is_better=True)
    )
    got, want = [], []
    for loss in losses_seq:
        got.append(float(state["outer"]))
        want.append(policy.thres)
        policy.record(float(loss))
        state = update(state, loss)
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert min(want) < 0.6  # the sequence moves the threshold


def test_rank_band_equals_quantiles_then_sample(data):
    """`bank_search.sample_rows_in_rank_band` (ranks as an int32 array, traced) draws what
    `bank_quantiles` + `sample_rows_where` draw for the same band (static quantiles), without
    replacement, on 8 devices; its bounds are the similarities at the two ranks."""
    mesh = sharding.make_mesh(jax.devices())
    bank = jax.device_put(data["bank"], NamedSharding(mesh, memory.ROWS))
    q = np.asarray(losses.l2_normalize(data["q"]))
    n, lo, hi = data["bank"].shape[0], 300, 480
    rng = jax.random.PRNGKey(5)
    got, valid, bounds = bank_search.sample_rows_in_rank_band(
        rng, bank, q, np.asarray([lo, hi], np.int32), 64, mesh, replace=False
    )
    ends = ((lo - 0.5) / n, (hi - 0.5) / n)
    at = bank_ranks.bank_quantiles(bank, q, ends, mesh)
    want, want_valid = bank_search.sample_rows_where(
        rng, bank, q, at[:, 0], at[:, 1], 64, mesh, replace=False
    )
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(valid, want_valid)
    ordered = np.sort(q.astype(np.float64) @ data["bank"].astype(np.float64).T, axis=1)
    np.testing.assert_allclose(bounds, ordered[:, [lo - 1, hi - 1]], atol=1e-6)


@pytest.mark.parametrize("ring, base", [("iring", "ir"), ("mocoring", "mocov2")])
def test_fashion_mnist_ring_configs_differ_from_their_baseline_only_in_the_ring(ring, base):
    """The comparison's two runs: same data, model, recipe, budget and loss numbers; only the
    method and the ring keys differ (`:anneal=linear` scales the paper's 100 of 200 epochs)."""
    from ssl_jax import configs

    for arg in ("", ":runlocal"):
        a = configs.load(f"configs/{ring}_fashion_mnist.py{arg}").to_dict()
        b = configs.load(f"configs/{base}_fashion_mnist.py{arg}").to_dict()
        ring_keys = {"ring_outer", "ring_inner", "anneal", "max_anneal_epochs"}
        assert set(a["method_config"]) - set(b["method_config"]) == ring_keys
        assert {k: a["method_config"][k] for k in b["method_config"]} == b["method_config"]
        a.pop("method_config"), b.pop("method_config")
        assert (a.pop("method"), b.pop("method")) == (ring, base)
        assert a == b
    linear = configs.load(f"configs/{ring}_fashion_mnist.py:anneal=linear,ball")
    assert linear.method_config.anneal == "linear" and linear.method_config.ring_inner == 0.0
    assert linear.method_config.max_anneal_epochs == linear.num_epochs / 2


@pytest.mark.parametrize("ring", ["iring", "mocoring"])
def test_color_fashion_mnist_ring_configs_share_mocov2s_data_model_and_budget(ring):
    """On color_fashion_mnist (no IR colour config) both ring configs have MoCo v2's data, recipe,
    encoder, head, optimiser and evals; MoCoRing also its loss numbers, queue and EMA (only the
    method and the ring keys differ), IRing its own bank, one view and no key encoder."""
    from ssl_jax import configs

    a = configs.load(f"configs/{ring}_color_fashion_mnist.py").to_dict()
    b = configs.load("configs/mocov2_color_fashion_mnist.py").to_dict()
    ring_keys = {"ring_outer", "ring_inner", "anneal", "max_anneal_epochs"}
    assert ring_keys <= set(a["method_config"])
    if ring == "mocoring":
        assert set(a["method_config"]) - set(b["method_config"]) == ring_keys
        assert {k: a["method_config"][k] for k in b["method_config"]} == b["method_config"]
    else:
        assert a["method_config"]["bank_size"] == 60_000
        assert a["data"].pop("views") == ("mocov2",) and b["data"].pop("views") == ("mocov2",) * 2
        a.pop("ema"), b.pop("ema")
    a.pop("method_config"), b.pop("method_config")
    assert (a.pop("method"), b.pop("method")) == (ring, "mocov2")
    assert a == b
    linear = configs.load(f"configs/{ring}_color_fashion_mnist.py:anneal=linear,ball")
    assert linear.method_config.anneal == "linear" and linear.method_config.ring_inner == 0.0
    assert linear.method_config.max_anneal_epochs == linear.num_epochs / 2
