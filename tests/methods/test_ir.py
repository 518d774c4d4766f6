"""IR (instance discrimination with a memory bank, the Ring code's `NCE` baseline) against numpy:

```
o = normalize(f(x)); cols = [idx, randint(N, (B, K))]        # own (stale) entry first, uniform noise
loss = −mean(bank[cols]·o/τ [:, 0] − logsumexp(bank[cols]·o/τ))   # before the bank write
bank[idx] = normalize(m·bank[idx] + (1−m)·o)                  # no other row changes
```

- The negatives' distribution is measured, not re-derived: `ir.loss_fn` runs (8-device sharded bank)
  with a stub model whose query is e₀ and a bank whose row j is (cos θ_j, sin θ_j, 0, …),
  θ_j = π(j + ½)/N, so each similarity the loss sees names the row it came from; a χ² goodness-of-fit
  over the N rows tests uniformity.
- One real 2-step train run (1 device, ResNet features via `model.apply`) checks the loss and the bank
  write end to end; step 1 revisits step 0's indices, so its positives are the entries step 0 wrote.
- 1 vs 8 devices: `tests/test_train.py::test_one_vs_eight_devices[ir]` (not repeated here).
- Bank init: 'uniform' (the Ring code's) vs 'normal' statistics, and which configs set it.
"""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from jax.sharding import NamedSharding
from scipy import stats

from configs import (
    ir_cifar10,
    ir_cifar100,
    ir_color_fashion_mnist,
    ir_fashion_mnist,
    ir_imagenet,
    ir_stl10,
    iring_cifar10,
    iring_cifar100,
    iring_color_fashion_mnist,
    iring_fashion_mnist,
    iring_imagenet,
    iring_stl10,
)
from ssl_jax import train
from ssl_jax.config_checks import ConfigError
from ssl_jax.data.device import recipe as device_recipe
from ssl_jax.methods import METHODS, common, ir, iring, memory
from ssl_jax.parallel import sharding
from tests.helpers import synthetic_batch, tiny_config

B = 16
N = 64  # bank rows = training examples of the tiny config
TAU = 0.07
TOL = dict(rtol=1e-4, atol=1e-5)


def np_normalize(x):
    x = np.asarray(x, np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def np_logsumexp(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def np_ir_loss(sims, tau):
    s = np.asarray(sims, np.float64) / tau
    return float(-np.mean(s[:, 0] - np_logsumexp(s)))


# --------------------------------------------------------------------------------------------------
# Negatives: uniform over the bank, own entry first and not excluded (stub model, sharded bank)


class QueryStub:
    """A 'model' whose projection is params['q'] for every example (the loss's query is known)."""

    def apply(self, variables, x, train, bn_groups, head_bn_groups, use_predictor, mutable):
        del train, bn_groups, head_bn_groups, use_predictor, mutable
        q = jnp.broadcast_to(
            variables["params"]["q"], (x.shape[0],) + variables["params"]["q"].shape
        )
        return {"projection": q}, {"batch_stats": variables["batch_stats"]}


def _angles():
    return np.pi * (np.arange(N) + 0.5) / N


def _decode(sims):
    """Row ids from similarities e₀·bank[j] = cos θ_j; checks each value matches its row exactly."""
    theta = np.arccos(np.clip(np.asarray(sims, np.float64), -1.0, 1.0))
    rows = np.rint(theta * N / np.pi - 0.5).astype(np.int64)
    assert rows.min() >= 0 and rows.max() < N
    np.testing.assert_allclose(sims, np.cos(_angles())[rows], atol=1e-6)
    return rows


@pytest.fixture(scope="module")
def draws():
    """`ir.loss_fn` on an 8-device mesh with K = 4096 negatives, for 4 rngs: the row ids behind every
    similarity the loss used (decoded from the similarities), the batch indices, loss and sims."""
    mesh = sharding.make_mesh(jax.devices())
    assert mesh.size == 8
    dim = 16
    hp = ir.Hparams(temperature=TAU, num_negatives=4096, bank_size=N, bank_momentum=0.5)
    ctx = common.StepContext(
        model=QueryStub(),
        mesh=mesh,
        config=None,
        hp=hp,
        num_train_examples=N,
        total_steps=1,
        steps_per_epoch=1,
    )
    bank_np = np.zeros((N, dim), np.float32)
    bank_np[:, 0], bank_np[:, 1] = np.cos(_angles()), np.sin(_angles())
    bank = jax.device_put(bank_np, NamedSharding(mesh, memory.ROWS))
    q = np.zeros(dim, np.float32)
    q[0] = 1.0
    index = np.random.default_rng(0).permutation(N)[:B].astype(np.int32)  # spans all 8 shards

    captured = []
    original = memory.row_similarities

    def recording(table, query, idx, mesh):
        out = original(table, query, idx, mesh)
        captured.append(out)
        return out

    @jax.jit
    def loss_and_sims(bank, rng):
        captured.clear()
        inp = common.StepInput(
            step=jnp.zeros((), jnp.int32),
            rng=rng,
            views=(jnp.zeros((B, 4, 4, 1)),),
            batch={"index": jnp.asarray(index)},
            buffers={"bank": bank},
        )
        loss, out = ir.loss_fn(ctx, {"q": jnp.asarray(q)}, {}, inp)
        assert len(captured) == 1
        return loss, captured[0], out.metrics

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(memory, "row_similarities", recording)
        results = [loss_and_sims(bank, jax.random.PRNGKey(seed)) for seed in range(4)]
    sims = [np.asarray(s) for _, s, _ in results]
    return {
        "index": index,
        "losses": [float(loss) for loss, _, _ in results],
        "metrics": [jax.device_get(m) for _, _, m in results],
        "sims": sims,
        "rows": [_decode(s) for s in sims],
    }


def test_positive_is_own_entry_and_negatives_are_uniform(draws):
    """Column 0 is bank[index]; columns 1..K over 4 draws (4·16·4096 = 262144 ids, 4096 expected
    per row) pass a χ² goodness-of-fit to Uniform{0..N−1}: statistic below the 1 − 1e-6 quantile
    of χ²(N − 1) (≈ 131.4 for 63 dof; the seeded draws give ≈ 87; never drawing one row would add
    ≈ 4096, drawing only one device's 8 rows ≈ 1.8·10⁶)."""
    for rows in draws["rows"]:
        np.testing.assert_array_equal(rows[:, 0], draws["index"])
        assert rows.shape == (B, 1 + 4096)
    noise = np.concatenate([rows[:, 1:].ravel() for rows in draws["rows"]])
    counts = np.bincount(noise, minlength=N)
    expected = noise.size / N
    chi2 = float(np.sum((counts - expected) ** 2 / expected))
    threshold = float(stats.chi2.ppf(1 - 1e-6, N - 1))
    assert 120 < threshold < 140
    assert chi2 < threshold, (chi2, threshold, counts)
    # the draws differ per rng and per row (not one column set repeated)
    assert not np.array_equal(draws["rows"][0][:, 1:], draws["rows"][1][:, 1:])
    assert not np.array_equal(draws["rows"][0][0, 1:], draws["rows"][0][1, 1:])


def test_own_entry_is_not_excluded_from_negatives(draws):
    """With N = 64 and K = 4096, each sample's own index appears among its negatives (the official
    code does not exclude it): ≈ K/N = 64 times per row."""
    for rows in draws["rows"]:
        own = np.sum(rows[:, 1:] == draws["index"][:, None], axis=1)
        assert np.all(own > 0), own
        assert 20 < own.mean() < 120


def test_loss_is_softmax_ce_over_own_entry_and_draws(draws):
    """The loss equals −mean(s₀/τ − logsumexp(s/τ)) of the similarities it used (which equal
    q·bank[rows]: checked by the decoding); metrics are their means."""
    for loss, sims, metrics in zip(draws["losses"], draws["sims"], draws["metrics"]):
        np.testing.assert_allclose(loss, np_ir_loss(sims, TAU), **TOL)
        np.testing.assert_allclose(metrics["pos_sim"], sims[:, 0].mean(), atol=1e-6)
        np.testing.assert_allclose(metrics["neg_sim"], sims[:, 1:].mean(), atol=1e-6)


@pytest.mark.parametrize("m", [0.5, 0.0])
def test_bank_update_at_the_index_only(m):
    """update_buffers on an 8-device sharded bank: rows `index` ← normalize(m·old + (1−m)·new)
    (m = 0: replaced by the normalised embedding), every other row bit-identical."""
    mesh = sharding.make_mesh(jax.devices())
    ctx = common.StepContext(
        model=None,
        mesh=mesh,
        config=None,
        hp=ir.Hparams(bank_size=N, bank_momentum=m),
        num_train_examples=N,
        total_steps=1,
        steps_per_epoch=1,
    )
    rng = np.random.default_rng(1)
    old = np_normalize(rng.normal(size=(N, 16))).astype(np.float32)
    index = rng.permutation(N)[:B].astype(np.int32)
    new = np_normalize(rng.normal(size=(B, 16))).astype(np.float32)
    inp = common.StepInput(
        step=jnp.zeros((), jnp.int32),
        rng=jax.random.PRNGKey(0),
        views=(),
        batch={"index": jnp.asarray(index)},
        buffers={"bank": jax.device_put(old, NamedSharding(mesh, memory.ROWS))},
    )
    got = np.asarray(ir.update_buffers(ctx, inp, {"embeddings": jnp.asarray(new)})["bank"])
    want = old.astype(np.float64).copy()
    want[index] = np_normalize(m * want[index] + (1 - m) * new)
    np.testing.assert_allclose(got, want, atol=1e-6)
    others = np.setdiff1d(np.arange(N), index)
    np.testing.assert_array_equal(got[others], old[others])
    if m == 0.0:
        np.testing.assert_allclose(got[index], new, atol=1e-6)


# --------------------------------------------------------------------------------------------------
# The train step end to end (real model, 1 device)


def _batch(config, step, index):
    batch = synthetic_batch(config, step)
    batch["index"] = np.asarray(index, np.int32)
    batch["label"] = batch["index"] % 10
    return batch


@pytest.fixture(scope="module")
def run():
    """2 steps; step 0 visits 16 scattered indices, step 1 the same ones in reverse order (its
    positives are the entries step 0 wrote). Host states before each step and after the last."""
    config = tiny_config("ir", temperature=TAU, num_negatives=32, bank_size=N, bank_momentum=0.5)
    exp = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    with jax.threefry_partitionable(False):  # a cheaper init compile (tests/methods/test_sce.py)
        state = train.init_or_restore(exp, None)
    index0 = np.random.default_rng(2).permutation(N)[:B]
    batches = [_batch(config, 0, index0), _batch(config, 1, index0[::-1])]
    step = train.jit_train_step(exp, state)
    states, metrics = [jax.device_get(state)], []
    for batch in batches:
        state, m = step(state, sharding.host_to_global(batch, exp.mesh))
        states.append(jax.device_get(state))
        metrics.append(jax.device_get(m))
    model = exp.ctx.model

    @jax.jit
    def project(params, stats, x):
        out, _ = model.apply(
            {"params": params, "batch_stats": stats}, x, train=True, mutable=["batch_stats"]
        )
        return out["projection"]

    queries = []
    for s, batch in enumerate(batches):
        x = device_recipe.normalize(batch["views"][0], config.data.mean, config.data.std)
        queries.append(np_normalize(project(states[s].params, states[s].batch_stats, x)))
    return dict(config=config, batches=batches, states=states, metrics=metrics, queries=queries)


def test_step_loss_uses_the_stale_own_entry_then_writes_the_bank(run):
    """Per step: loss = numpy IR loss with columns [index, randint(loss_rng, (B, K), 0, N)] (the
    engine's loss_rng, reproduced here only to know which rows the step drew) on the bank at the
    step's start; then bank[index] = normalize(0.5·old + 0.5·q), other rows unchanged. At step 1 the
    positive is the (stale) entry step 0 wrote, not the current embedding."""
    k = run["config"].method_config.num_negatives
    states, metrics = run["states"], run["metrics"]
    for s, batch in enumerate(run["batches"]):
        st, q, index = states[s], run["queries"][s], batch["index"]
        bank = np.asarray(st.buffers["bank"], np.float64)
        loss_rng = jax.random.split(jax.random.fold_in(st.rng, s))[1]
        noise = np.asarray(jax.random.randint(loss_rng, (B, k), 0, N, jnp.int32))
        cols = np.concatenate([index[:, None], noise], axis=1)
        sims = np.einsum("bd,bjd->bj", q, bank[cols])
        loss = float(metrics[s]["train/loss"])
        np.testing.assert_allclose(loss, np_ir_loss(sims, TAU), **TOL)
        np.testing.assert_allclose(metrics[s]["train/pos_sim"], sims[:, 0].mean(), atol=1e-5)

        after = np.asarray(states[s + 1].buffers["bank"])
        want = bank.copy()
        want[index] = np_normalize(0.5 * bank[index] + 0.5 * q)
        np.testing.assert_allclose(after, want, atol=2e-5)
        others = np.setdiff1d(np.arange(N), index)
        np.testing.assert_array_equal(after[others], np.asarray(st.buffers["bank"])[others])

    # step 1's positive column: the entry step 0 wrote for the same example (stale), ≠ q·q = 1
    q1, index1 = run["queries"][1], run["batches"][1]["index"]
    written = np.asarray(states[1].buffers["bank"], np.float64)[index1]
    pos = np.sum(q1 * written, axis=1)
    np.testing.assert_allclose(metrics[1]["train/pos_sim"], pos.mean(), atol=1e-5)
    assert pos.mean() < 0.999
    loss1 = float(metrics[1]["train/loss"])
    bank1 = np.asarray(states[1].buffers["bank"], np.float64)
    loss_rng = jax.random.split(jax.random.fold_in(states[1].rng, 1))[1]
    noise = np.asarray(jax.random.randint(loss_rng, (B, k), 0, N, jnp.int32))
    sims_fresh = np.concatenate(
        [np.ones((B, 1)), np.einsum("bd,bjd->bj", q1, bank1[noise])], axis=1
    )
    assert abs(np_ir_loss(sims_fresh, TAU) - loss1) > 1e-2


# --------------------------------------------------------------------------------------------------
# Bank init: 'uniform' (the Ring code's `MemoryBank._create`) vs 'normal' (the default)

RING_CODE_CONFIGS = (ir_cifar10, ir_cifar100, ir_stl10, iring_cifar10, iring_cifar100, iring_stl10)
DEFAULT_INIT_CONFIGS = (
    ir_imagenet,
    ir_fashion_mnist,
    ir_color_fashion_mnist,
    iring_imagenet,
    iring_fashion_mnist,
    iring_color_fashion_mnist,
)


@pytest.mark.parametrize("module", RING_CODE_CONFIGS + DEFAULT_INIT_CONFIGS)
def test_config_bank_init(module):
    """The configs with the Ring code's bank set 'uniform'; the others keep the default 'normal'."""
    config = module.get_config()
    hp = common.method_hparams(METHODS[config.method], config)
    assert hp.bank_init == ("uniform" if module in RING_CODE_CONFIGS else "normal")


def _init_bank(method, init: str, rows: int = 1024, dim: int = 128) -> np.ndarray:
    config = ml_collections.ConfigDict({"model": {"projector": {"out_dim": dim}}})
    ctx = common.StepContext(
        model=None,
        mesh=None,
        config=config,
        hp=method.Hparams(bank_size=rows, bank_init=init),
        num_train_examples=rows,
        total_steps=1,
        steps_per_epoch=1,
    )
    return np.asarray(method.init_buffers(jax.random.PRNGKey(0), ctx)["bank"], np.float64)


@pytest.mark.parametrize("method", [ir, iring])
def test_bank_init_statistics(method):
    """'uniform' = normalize(U(±s)), s = 1/√(D/3) (`torch.rand(N, D)·2s − s`, then `l2_normalize`):
    unit rows, |x|·√(D/3) ≤ ~1 (the cube's corner over the row's norm), coordinate kurtosis ≈ 1.8;
    'normal' = normalize(randn): unit rows, kurtosis ≈ 3·D/(D+2), far larger extremes."""
    dim = 128
    s = 1.0 / np.sqrt(dim / 3)
    uniform, normal = _init_bank(method, "uniform"), _init_bank(method, "normal")
    for bank in (uniform, normal):
        np.testing.assert_allclose(np.linalg.norm(bank, axis=1), 1.0, atol=1e-5)
    want = np_normalize(
        jax.random.uniform(jax.random.PRNGKey(0), uniform.shape, minval=-s, maxval=s)
    )
    np.testing.assert_allclose(uniform, want, atol=1e-6)
    assert np.abs(uniform).max() * np.sqrt(dim / 3) < 1.25
    assert np.abs(normal).max() * np.sqrt(dim / 3) > 2.0
    assert abs(stats.kurtosis(uniform.ravel(), fisher=False) - 1.8) < 0.1
    assert abs(stats.kurtosis(normal.ravel(), fisher=False) - 3 * dim / (dim + 2)) < 0.15


def test_unknown_bank_init_is_refused():
    config = tiny_config("ir", bank_size=N, bank_init="xavier")
    with pytest.raises(ConfigError, match="bank_init"):
        common.method_hparams(ir, config)
