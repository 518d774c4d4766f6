"""CMCv2 (PyContrast's preset): the step against a float64 numpy reference of `CMCMoCo`'s order
(PyContrast `pycontrast/memory/mem_moco.py` L91 `CMCMoCo`):

```
q1, q2 = normalize(online(x1));  k1, k2 = normalize(ema(x2))
loss = CE([q1·k2, q1·queue2ᵀ]/τ, 0) + CE([q2·k1, q2·queue1ᵀ]/τ, 0)
optimiser;  ema = α·ema + (1−α)·online;  queue1 ← k1, queue2 ← k2
```
The tiny two-encoder model of `test_cmc.py` on two 16-px synthetic colour views: 2 train steps on 8
devices, checked against the reference computed from the forward on ONE device (so the 8-device step
agrees with a 1-device computation without compiling a second train step); the resume test restores
the state after step 1 and repeats step 2.
"""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from ssl_jax import checkpoint, train
from ssl_jax.methods import METHODS, cmcv2, common
from ssl_jax.models import head_config
from ssl_jax.parallel import sharding
from tests.helpers import (
    TINY_RECIPE,
    np_ce0,
    np_normalize,
    place_state,
    synthetic_batch,
    tiny_config,
)

B, Q, TAU, STEPS = 16, 64, 0.2, 2


def cmcv2_config():
    c = tiny_config("mocov2")
    c.method = "cmcv2"
    c.method_config = ml_collections.ConfigDict(
        # one key BN group: the keys can be recomputed without the permutation
        dict(
            temperature=TAU,
            queue_size=Q,
            query_bn_group_size=0,
            key_bn_group_size=0,
            shuffle_bn=False,
        )
    )
    c.data.channels = 3
    c.data.mean, c.data.std = (0.5,) * 3, (0.25,) * 3
    c.data.recipes = ml_collections.ConfigDict(
        {"tiny": (*TINY_RECIPE, {"op": "color_space", "space": "ydbdr"})}
    )
    c.model.projector = head_config((32,), 16, use_bn=False)  # PyContrast's 'mlp' head
    c.ema.base = 0.5  # the target visibly moves after step 0
    c.optim.base_lr = 0.01
    return c


@pytest.fixture(scope="module")
def runs():
    config = cmcv2_config()
    exp1 = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    exp8 = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()))
    assert exp8.ctx.num_devices == 8
    init = jax.device_get(train.init_or_restore(exp1, None))
    state = place_state(init, exp8)
    step = train.jit_train_step(exp8, state)
    states, metrics = [init], []
    for i in range(STEPS):
        state, m = step(state, sharding.host_to_global(synthetic_batch(config, i), exp8.mesh))
        metrics.append(jax.device_get(m))
        states.append(jax.device_get(state))
    return {
        "config": config,
        "exp": exp1,
        "exp8": exp8,
        8: {"states": states, "metrics": metrics, "step": step},
    }


_FORWARDS = {}


def _keys_and_queries(runs, step):
    """(state, [q1, q2], [k1, k2]) of `step` from ONE-device forwards (float64, normalised)."""
    config, exp, state = runs["config"], runs["exp"], runs[8]["states"][step]
    if "fn" not in _FORWARDS:

        @jax.jit
        def fn(state, batch):
            inp = train.step_input(exp, state, batch)
            fwd = lambda p, s, x: common.forward(exp.ctx, p, s, x)[0]
            q = fwd(state.params, state.batch_stats, inp.views[0])
            k = fwd(inp.target["params"], state.target_batch_stats, inp.views[1])
            return q, k

        _FORWARDS["fn"] = fn
    batch = jax.tree.map(jnp.asarray, synthetic_batch(config, step))
    q, k = jax.device_get(_FORWARDS["fn"](state, batch))
    queries = [np_normalize(q[f"projection{v}"]) for v in (1, 2)]
    return state, queries, [np_normalize(k[f"projection{v}"]) for v in (1, 2)]


def test_registered_with_ema_after_the_optimiser(runs):
    assert METHODS["cmcv2"] is cmcv2
    assert cmcv2.USES_TARGET and not cmcv2.EMA_BEFORE_KEYS
    assert runs["exp"].ctx.model.ENCODERS == ("encoder1", "encoder2")


@pytest.mark.own_device_test("cmcv2")
@pytest.mark.parametrize("step", [0, 1])
def test_step_loss_is_the_cross_view_infonce(runs, step):
    """Steps 0 and 1 (at 1, target = EMA of step 0, queues partly filled): the loss the 8-device
    step logged is CE(q1 vs k2, queue2) + CE(q2 vs k1, queue1) from the 1-device forward."""
    state, (q1, q2), (k1, k2) = _keys_and_queries(runs, step)
    queue1 = np.asarray(state.buffers["queue1"], np.float64)
    queue2 = np.asarray(state.buffers["queue2"], np.float64)
    l1 = np_ce0(np.concatenate([(q1 * k2).sum(1, keepdims=True), q1 @ queue2.T], 1) / TAU)
    l2 = np_ce0(np.concatenate([(q2 * k1).sum(1, keepdims=True), q2 @ queue1.T], 1) / TAU)
    m = runs[8]["metrics"][step]
    np.testing.assert_allclose(m["train/loss"], l1 + l2, rtol=1e-4)
    np.testing.assert_allclose([m["train/loss1"], m["train/loss2"]], [l1, l2], rtol=1e-4)


def test_queues_receive_their_views_keys_and_ema_follows(runs):
    s0, s1 = runs[8]["states"][0], runs[8]["states"][1]
    _, _, (k1, k2) = _keys_and_queries(runs, 0)
    np.testing.assert_allclose(np.asarray(s1.buffers["queue1"])[:B], k1, atol=1e-5)
    np.testing.assert_allclose(np.asarray(s1.buffers["queue2"])[:B], k2, atol=1e-5)
    assert int(s1.buffers["queue_ptr"]) == B
    # EMA after the optimiser step: target_1 = 0.5·target_0 + 0.5·params_1
    a, t0, p1 = (jax.tree.leaves(t)[0] for t in (s1.target_params, s0.target_params, s1.params))
    np.testing.assert_allclose(
        np.asarray(a), 0.5 * np.asarray(t0) + 0.5 * np.asarray(p1), atol=1e-6
    )


def test_save_restore_next_step_is_identical(runs, tmp_path):
    exp, step, config = runs["exp8"], runs[8]["step"], runs["config"]
    ckpt = checkpoint.Checkpointer(str(tmp_path))
    ckpt.save(place_state(runs[8]["states"][1], exp), force=True)
    ckpt.wait()
    restored = train.init_or_restore(exp, ckpt)
    state, m = step(restored, sharding.host_to_global(synthetic_batch(config, 1), exp.mesh))
    assert float(m["train/loss"]) == float(runs[8]["metrics"][1]["train/loss"])
    for a, b in zip(
        jax.tree.leaves(jax.device_get(state)), jax.tree.leaves(runs[8]["states"][2]), strict=True
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_imagenet_stems_are_pycontrasts_64_channels():
    """PyContrast's ResNet stem has `max(int(64·width), 64)` channels (`networks/resnet.py` L139):
    64 for the two width-0.5 encoders, whose first stage is 32 wide; the cosine counts epochs from 1."""
    from ssl_jax import configs
    from tests.methods.test_cmc import stem_channels

    c = configs.load("configs/cmcv2_imagenet.py")
    assert stem_channels(c) == {"encoder1": (64, 64), "encoder2": (64, 64)}
    model = cmcv2.build_model(c)
    assert model.encoder1.feature_dim == model.encoder2.feature_dim == 1024  # base 32
    assert c.optim.epoch_offset == 1.0
