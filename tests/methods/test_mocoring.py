"""MoCoRing (CNCE with a MoCo queue) end to end with the code's `adaptive_anneal_on_loss` policy (outer
from 1.0, ±0.01 against the mean of the last 10 losses), whose state lives in the buffers:

- the step's loss = a float64 numpy MoCoRing (q, k recomputed, the queue sorted, ALL ring entries)
  at the outer fraction of the state; the adaptive state after each step = the code's policy fed the
  logged losses;
- 4 steps on 1 and on 8 devices agree;
- the state after step 2 saved and restored: step 3 is bit-identical (the window is in the state);
- `train_and_evaluate` (8 devices, pipeline) runs it and logs the ring; the constant schedule
  (every released config: outer 0.1, a static top-k) gives the numpy loss at the same states.
"""

import jax
import ml_collections
import numpy as np
import pytest

from ssl_jax import checkpoint, train
from ssl_jax.methods import METHODS, common, mocoring
from ssl_jax.parallel import sharding
from tests.helpers import np_normalize, place_state, synthetic_batch, tiny_config
from tests.test_ring import AdaptiveThresholdPolicy, np_moco_ring

Q, B, TAU, INNER = 64, 16, 0.2, 0.1
STEPS = 4


def mocoring_config(**method_config):
    c = tiny_config("mocov2")
    c.method = "mocoring"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=TAU,
            queue_size=Q,
            query_bn_group_size=0,
            key_bn_group_size=0,
            shuffle_bn=False,  # one BN group: the keys can be recomputed without the permutation
            ring_outer=0.1,
            ring_inner=INNER,
            anneal="adaptive_loss",
        )
    )
    c.method_config.update(method_config)
    c.ema.base = 0.5  # the target differs visibly from the online network after step 0
    c.optim.base_lr = 0.01
    c.total_steps = STEPS
    return c


@pytest.fixture(scope="module")
def runs():
    config = mocoring_config()
    batches = [synthetic_batch(config, i) for i in range(STEPS)]
    out = {"config": config, "batches": batches}
    init = None
    for n in (1, 8):
        exp = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:n]))
        if init is None:
            init = jax.device_get(train.init_or_restore(exp, None))
        state = place_state(init, exp)
        step = train.jit_train_step(exp, state)
        states, metrics = [init], []
        for batch in batches:
            state, m = step(state, sharding.host_to_global(batch, exp.mesh))
            metrics.append(jax.device_get(m))
            states.append(jax.device_get(state))
        out[n] = {"states": states, "metrics": metrics, "step": step, "exp": exp}
    return out


def test_registered_with_moco_timing():
    assert METHODS["mocoring"] is mocoring
    assert mocoring.EMA_BEFORE_KEYS and mocoring.USES_TARGET


def test_adaptive_state_follows_the_code(runs):
    metrics, states = runs[1]["metrics"], runs[1]["states"]
    policy = AdaptiveThresholdPolicy(True, 1.0, 0.1, 1.0, 0.01, 10)
    for s, m in enumerate(metrics):
        assert float(m["train/ring_outer"]) == pytest.approx(policy.thres, abs=1e-6)
        assert float(states[s].buffers["ring"]["outer"]) == pytest.approx(policy.thres, abs=1e-6)
        policy.record(float(m["train/loss"]))
        assert int(states[s + 1].buffers["ring"]["count"]) == s + 1
    assert float(states[-1].buffers["ring"]["outer"]) == pytest.approx(policy.thres, abs=1e-6)
    # the window holds the logged losses (the clipping at 1.0 hides their direction here; the
    # policy's moves are checked on a longer sequence in tests/test_ring.py)
    window = np.asarray(states[-1].buffers["ring"]["window"])
    np.testing.assert_allclose(window[:STEPS], [m["train/loss"] for m in metrics], rtol=1e-6)


@pytest.mark.parametrize("s, anneal", [(1, "adaptive_loss"), (3, "adaptive_loss"), (2, "constant")])
def test_step_loss_is_the_official_formula(runs, s, anneal):
    """At the run's states; 'constant' (every released config: outer 0.1 of the 64-entry queue,
    positions 0 … 5, a static top-k of 6) evaluates the same state under that schedule."""
    state, exp = runs[1]["states"][s], runs[1]["exp"]
    if anneal == "constant":
        exp = train.build_experiment(
            mocoring_config(anneal=anneal), mesh=sharding.make_mesh(jax.devices()[:1])
        )
    batch = jax.tree.map(np.asarray, runs["batches"][s])
    inp = jax.jit(lambda st, b: train.step_input(exp, st, b))(state, batch)
    loss, out = jax.jit(lambda p, bs, i: mocoring.loss_fn(exp.ctx, p, bs, i))(
        state.params, state.batch_stats, inp
    )
    fwd = jax.jit(lambda p, bs, x: common.forward(exp.ctx, p, bs, x, use_predictor=False)[0])
    q = fwd(state.params, state.batch_stats, inp.views[0])["projection"]
    k = fwd(inp.target["params"], state.target_batch_stats, inp.views[1])["projection"]
    queue = np.asarray(state.buffers["queue"], np.float64)
    outer = float(state.buffers["ring"]["outer"]) if anneal != "constant" else 0.1
    np.testing.assert_allclose(float(loss), np_moco_ring(q, k, queue, TAU, outer, INNER), rtol=1e-4)
    if anneal != "constant":
        np.testing.assert_allclose(runs[1]["metrics"][s]["train/loss"], float(loss), rtol=1e-5)
    # ring bounds: cosines at descending positions stop − 1 and start of q·queueᵀ
    srt = -np.sort(-(np_normalize(q) @ queue.T), axis=1)
    stop = int(np.float32(outer) * Q)
    start = int(np.float32(INNER) * stop)
    np.testing.assert_allclose(out.metrics["ring_lo"], srt[:, stop - 1].mean(), atol=1e-5)
    np.testing.assert_allclose(out.metrics["ring_hi"], srt[:, start].mean(), atol=1e-5)
    np.testing.assert_allclose(
        out.metrics["neg_sim"], srt[:, start:stop].mean(axis=1).mean(), atol=1e-5
    )


def test_one_vs_eight_devices(runs):
    m1, m8 = runs[1]["metrics"], runs[8]["metrics"]
    for key in (
        "train/loss",
        "train/ring_outer",
        "train/ring_lo",
        "train/ring_hi",
        "train/neg_sim",
    ):
        np.testing.assert_allclose(
            [m[key] for m in m1], [m[key] for m in m8], rtol=2e-4, atol=1e-5, err_msg=key
        )
    for name in ("queue",):
        np.testing.assert_allclose(
            runs[1]["states"][-1].buffers[name], runs[8]["states"][-1].buffers[name], atol=2e-5
        )


def test_save_restore_mid_anneal_next_step_is_identical(runs, tmp_path):
    exp, step = runs[1]["exp"], runs[1]["step"]
    ckpt = checkpoint.Checkpointer(str(tmp_path))
    ckpt.save(place_state(runs[1]["states"][2], exp), force=True)
    ckpt.wait()
    restored = train.init_or_restore(exp, ckpt)
    state, m = step(restored, sharding.host_to_global(runs["batches"][2], exp.mesh))
    assert float(m["train/loss"]) == float(runs[1]["metrics"][2]["train/loss"])
    for a, b in zip(
        jax.tree.leaves(jax.device_get(state)), jax.tree.leaves(runs[1]["states"][3]), strict=True
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow
def test_train_and_evaluate_logs_the_ring(runs, tmp_path):
    """The config through the whole loop on 8 devices (pipeline, checkpoints), stopped at step 2."""
    from ssl_jax.output.writers import read_metrics

    train.train_and_evaluate(runs["config"], str(tmp_path), stop_after_steps=2)
    rows = [r for r in read_metrics(str(tmp_path)) if "train/loss" in r]
    assert [r["step"] for r in rows] == [1, 2]
    assert rows[0]["train/ring_outer"] == pytest.approx(1.0)  # adaptive: starts at the full queue
    for r in rows:
        assert np.isfinite(r["train/loss"]) and r["train/ring_lo"] <= r["train/ring_hi"]
