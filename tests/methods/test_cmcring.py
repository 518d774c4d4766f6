"""CMCRing (ours; no code exists): CMC's two views and banks with the Ring code's NCERing selection
on each cross-view bank (inferred: mhw32/contrastive-ring-public has no CMC code in any commit):

```
ring_v = descending positions int(inner·int(outer·N)) … int(outer·N) − 1 of f_v·bank_otherᵀ
neg_v  = K draws from ring_v;  L_v = −mean(pos − logsumexp([pos, neg]))/τ-scaled;  loss = L_1 + L_2
```
`cmcring.loss_fn` of one step on random banks in CMC's tiny shape (`test_cmc.cmc_config`), on 1 and 8
devices: the drawn rows lie in each direction's ring, the loss is the float64 numpy formula of
those draws, and the draws and loss agree across device counts.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ssl_jax import train
from ssl_jax.config_checks import ConfigError
from ssl_jax.methods import METHODS, cmcring, common, losses
from ssl_jax.parallel import sharding
from tests.helpers import np_normalize, synthetic_batch
from tests.methods.test_cmc import cmc_config

N, B, K, TAU, OUTER, INNER = 64, 16, 24, 0.07, 0.25, 0.2  # CMC's tiny shape: bank 64, batch 16


def cmcring_config(**method_config):
    c = cmc_config(loss="softmax", num_negatives=K, bank_size=N)
    c.method = "cmcring"
    c.method_config.update(ring_outer=OUTER, ring_inner=INNER, **method_config)
    return c


@pytest.fixture(scope="module")
def steps():
    """`loss_fn` outputs of step 0 (random normalised banks) on 1 and 8 devices."""
    config = cmcring_config()
    batch = jax.tree.map(jnp.asarray, synthetic_batch(config, 0))
    out = {}
    for n in (1, 8):
        exp = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:n]))
        state = train.init_or_restore(exp, None)
        r1, r2 = jax.random.split(jax.random.PRNGKey(5))
        buffers = dict(state.buffers)
        for name, r in (("bank1", r1), ("bank2", r2)):
            rows = losses.l2_normalize(jax.random.normal(r, state.buffers[name].shape))
            buffers[name] = jax.device_put(rows, state.buffers[name].sharding)
        state = state.replace(buffers=buffers)

        @jax.jit
        def run(state, batch, exp=exp):
            inp = train.step_input(exp, state, batch)
            loss, o = cmcring.loss_fn(exp.ctx, state.params, state.batch_stats, inp)
            f = common.online_forward(exp.ctx, state.params, state.batch_stats, inp.views[0])[0]
            return loss, o.metrics, o.updates["negatives"], f

        out[n] = (jax.device_get(run(state, batch)), jax.device_get(state.buffers), batch)
    return out


def test_registered():
    assert METHODS["cmcring"] is cmcring and not cmcring.USES_TARGET


def test_draws_lie_in_each_directions_ring_and_loss_is_the_formula(steps):
    (loss, metrics, (neg1, neg2), proj), buffers, batch = steps[1]
    f1, f2 = np_normalize(proj["projection1"]), np_normalize(proj["projection2"])
    index = np.asarray(batch["index"])
    start, stop = int(INNER * int(OUTER * N)), int(OUTER * N)
    total = 0.0
    for f, bank, neg in ((f1, buffers["bank2"], neg1), (f2, buffers["bank1"], neg2)):
        bank = np.asarray(bank, np.float64)
        sims = f @ bank.T  # [B, N]
        order = np.argsort(-sims, axis=1)
        for b in range(B):
            assert set(neg[b]) <= set(order[b, start:stop]), b
        pos = sims[np.arange(B), index] / TAU
        part = np.concatenate([pos[:, None], np.take_along_axis(sims, neg, 1) / TAU], axis=1)
        mx = part.max(1)
        total += float(np.mean(mx + np.log(np.exp(part - mx[:, None]).sum(1)) - pos))
    np.testing.assert_allclose(float(loss), total, rtol=1e-4)
    np.testing.assert_allclose(float(metrics["loss1"] + metrics["loss2"]), total, rtol=1e-4)
    assert float(metrics["ring_lo"]) <= float(metrics["neg_sim"]) <= float(metrics["ring_hi"])


@pytest.mark.own_device_test("cmcring")
def test_one_vs_eight_devices(steps):
    (l1, m1, n1, _), _, _ = steps[1]
    (l8, m8, n8, _), _, _ = steps[8]
    for a, b in zip(n1, n8, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(float(l1), float(l8), rtol=1e-5)
    np.testing.assert_allclose(float(m1["ring_hi"]), float(m8["ring_hi"]), rtol=1e-5)


def test_nce_loss_is_refused():
    config = cmcring_config(loss="nce")
    with pytest.raises(ConfigError, match="allowed: 'softmax'"):
        train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
