"""MoCo v2: the step against a float64 numpy reference written from the official order of operations
(MoCo `moco/builder.py`, as JCL/InterCLR and Ring's MoCo use it):

```
target = m·target + (1−m)·online          # BEFORE the keys
k = normalize(target(shuffle(x_k)))[unshuffle]   # shuffle-BN: BN statistics per group of the permuted batch
logits = [q·k, q·queueᵀ] / τ;  loss = CE(logits, label 0)
queue[ptr:ptr+B] = k;  ptr = (ptr + B) mod K
```

One 1-device run of 3 steps with a queue of K = 2B (the pointer wraps after 2 steps) and EMA momentum
0.5 (at step 1 the EMA'd target, the un-updated target and the online network are three visibly
different networks). Features come from `model.apply` (jitted once per shape); the BN groups of the key
forward are recomputed by forwarding each group of the permuted batch on its own (train-mode BN over
that group only), not through the model's `bn_groups`. 1 vs 8 devices: `tests/test_train.py::
test_one_vs_eight_devices[mocov2]` (same tiny config, shuffle-BN over 4 groups) — not repeated here.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ssl_jax import train
from ssl_jax.data.device import recipe as device_recipe
from ssl_jax.methods import common, mocov2
from ssl_jax.parallel import sharding
from tests.helpers import synthetic_batch, tiny_config

B = 16
K = 2 * B  # the FIFO wraps after K / B = 2 steps
GROUPS = 4  # key BN groups of the shuffled forward
TAU = 0.2
EMA = 0.5
STEPS = 3
TOL = dict(rtol=1e-4, atol=1e-5)


def moco_config():
    config = tiny_config(
        "mocov2", temperature=TAU, queue_size=K, shuffle_bn=True, key_bn_group_size=B // GROUPS
    )
    config.ema.base = EMA
    return config


# --------------------------------------------------------------------------------------------------
# numpy references


def np_normalize(x):
    x = np.asarray(x, np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def np_logsumexp(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def np_info_nce(q, k, queue, tau, label=0):
    """CE over logits = [q·k, q·queueᵀ]/τ with the given label column (official: 0)."""
    q, k, queue = (np.asarray(a, np.float64) for a in (q, k, queue))
    logits = np.concatenate([np.sum(q * k, axis=1, keepdims=True), q @ queue.T], axis=1) / tau
    return float(np.mean(np_logsumexp(logits) - logits[np.arange(len(q)), label]))


def np_ema(target, online, m):
    return jax.tree.map(lambda t, o: m * np.asarray(t) + (1.0 - m) * np.asarray(o), target, online)


# --------------------------------------------------------------------------------------------------
# the run and the reference forwards


@pytest.fixture(scope="module")
def run():
    """3 steps on one device: host copies of the state BEFORE each step (and after the last), the
    metrics of each step. The initial state is drawn with non-partitionable threefry (a much cheaper
    compile on CPU, see tests/methods/test_sce.py); the step keeps the engine's settings."""
    config = moco_config()
    exp = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    with jax.threefry_partitionable(False):
        state = train.init_or_restore(exp, None)
    step = train.jit_train_step(exp, state)
    states, metrics = [jax.device_get(state)], []
    for i in range(STEPS):
        state, m = step(state, sharding.host_to_global(synthetic_batch(config, i), exp.mesh))
        states.append(jax.device_get(state))
        metrics.append(jax.device_get(m))
    return {"config": config, "exp": exp, "states": states, "metrics": metrics}


_PROJECTIONS = {}


def _grouped_projection(model, groups):
    """x [B, ...] → projections [B, D], train-mode BN computed separately on each of `groups`
    contiguous groups: each group is its own forward (vmap), with one BN group. Jitted once."""
    if (id(model), groups) in _PROJECTIONS:
        return _PROJECTIONS[id(model), groups]

    def f(params, stats, x):
        def one(xg):
            out, _ = model.apply(
                {"params": params, "batch_stats": stats},
                xg,
                train=True,
                bn_groups=1,
                use_predictor=False,
                mutable=["batch_stats"],
            )
            return out["projection"]

        xg = x.reshape((groups, x.shape[0] // groups) + x.shape[1:])
        return jax.vmap(one)(xg).reshape(x.shape[0], -1)

    _PROJECTIONS[id(model), groups] = jax.jit(f)
    return _PROJECTIONS[id(model), groups]


def project(exp, params, stats, x, groups=1):
    return np.asarray(_grouped_projection(exp.ctx.model, groups)(params, stats, x), np.float64)


def views_of(config, step):
    batch = synthetic_batch(config, step)
    return [
        device_recipe.normalize(v, config.data.mean, config.data.std, jnp.float32)
        for v in batch["views"]
    ]


def loss_rng_of(state, step):
    """`train.make_train_step`: rng = fold_in(state.rng, step); (view_rng, loss_rng) = split(rng)."""
    return jax.random.split(jax.random.fold_in(state.rng, step))


def ref_keys(exp, target_params, target_stats, x, perm, groups):
    """normalize(target(x[perm]) with BN per group of the permuted batch)[argsort(perm)]."""
    perm = np.asarray(perm)
    k = project(exp, target_params, target_stats, np.asarray(x)[perm], groups)
    return np_normalize(k[np.argsort(perm)])


@pytest.fixture(scope="module")
def refs(run):
    """Per step: the numpy-side q, the official keys (EMA'd target, loss_rng permutation, 4 groups),
    the queue at the step's start."""
    exp, config, states = run["exp"], run["config"], run["states"]
    out = []
    for s in range(STEPS):
        st = states[s]
        views = views_of(config, s)
        _, loss_rng = loss_rng_of(st, s)
        perm = np.asarray(jax.random.permutation(loss_rng, B))
        target = np_ema(st.target_params, st.params, EMA)
        out.append(
            {
                "views": views,
                "perm": perm,
                "target": target,
                "q": np_normalize(project(exp, st.params, st.batch_stats, views[0])),
                "k": ref_keys(exp, target, st.target_batch_stats, views[1], perm, GROUPS),
                "queue": np.asarray(st.buffers["queue"], np.float64),
            }
        )
    return out


def _max_diff(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


# --------------------------------------------------------------------------------------------------
# tests


def test_protocol_flags():
    assert mocov2.EMA_BEFORE_KEYS is True and mocov2.USES_TARGET is True


def test_ema_before_keys_where_target_differs_from_online(run, refs):
    """Step 1 (after one update): the loss uses keys of ema(target, online_at_step_start), not of the
    un-updated target, nor of the online network; the new target is that EMA."""
    exp, states, metrics = run["exp"], run["states"], run["metrics"]
    st, r = states[1], refs[1]
    moved = max(
        _max_diff(t, o) for t, o in zip(*map(jax.tree.leaves, (st.target_params, st.params)))
    )
    assert moved > 1e-3, "online must have moved away from the target after step 0"

    loss = float(metrics[1]["train/loss"])
    expected = np_info_nce(r["q"], r["k"], r["queue"], TAU)
    np.testing.assert_allclose(loss, expected, **TOL)

    x = r["views"][1]
    stale = ref_keys(exp, st.target_params, st.target_batch_stats, x, r["perm"], GROUPS)
    online = ref_keys(exp, st.params, st.target_batch_stats, x, r["perm"], GROUPS)
    for wrong in (stale, online):
        assert _max_diff(wrong, r["k"]) > 1e-3
        wrong_loss = np_info_nce(r["q"], wrong, r["queue"], TAU)
        assert abs(wrong_loss - loss) > 50 * (TOL["atol"] + TOL["rtol"] * abs(loss)), wrong_loss

    # the keys the step enqueued are the EMA'd target's (rows 16..31 at step 1)
    enqueued = states[2].buffers["queue"][B : 2 * B]
    np.testing.assert_allclose(enqueued, r["k"], atol=2e-5)
    assert _max_diff(enqueued, stale) > 1e-3
    # and the state's new target is exactly that EMA (no second update after the optimiser)
    for got, want in zip(*map(jax.tree.leaves, (states[2].target_params, r["target"]))):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_positive_is_label_zero(run, refs):
    """Every step's loss is CE with the positive q·k in column 0 (not column 1, a queue entry); step 2
    runs on a queue that holds step 0's and step 1's keys."""
    for s in range(STEPS):
        r = refs[s]
        loss = float(run["metrics"][s]["train/loss"])
        np.testing.assert_allclose(loss, np_info_nce(r["q"], r["k"], r["queue"], TAU), **TOL)
        assert abs(loss - np_info_nce(r["q"], r["k"], r["queue"], TAU, label=1)) > 0.1
        np.testing.assert_allclose(
            run["metrics"][s]["train/pos_sim"], np.mean(np.sum(r["q"] * r["k"], 1)), atol=1e-5
        )


def test_queue_fifo_wraps_after_k_over_b_steps(run, refs):
    """After each step rows ptr..ptr+B hold that step's L2-normalised keys in batch order, the other
    rows are untouched, and ptr → (ptr + B) mod K: 0 → 16 → 0 → 16; step 2 overwrites step 0's keys."""
    states, init = run["states"], run["states"][0]
    assert [int(s.buffers["queue_ptr"]) for s in states] == [0, B, 0, B]
    q0, q1, q2, q3 = (np.asarray(s.buffers["queue"]) for s in states)
    k0, k1, k2 = (r["k"] for r in refs)
    np.testing.assert_allclose(q1[:B], k0, atol=2e-5)
    np.testing.assert_array_equal(q1[B:], q0[B:])
    np.testing.assert_array_equal(q2[:B], q1[:B])
    np.testing.assert_allclose(q2[B:], k1, atol=2e-5)
    np.testing.assert_allclose(q3[:B], k2, atol=2e-5)  # wrapped: step 0's keys are gone
    np.testing.assert_array_equal(q3[B:], q2[B:])
    assert _max_diff(q3[:B], k0) > 1e-2
    assert _max_diff(k0[::-1], k0) > 1e-2  # batch order is checked, not just the set of rows
    np.testing.assert_allclose(np.linalg.norm(q3, axis=1), 1.0, rtol=1e-5)
    assert init.buffers["queue"].shape == (K, 16)


def test_shuffle_bn_permutes_groups_and_unpermutes(run, refs):
    """Step 0 (4 key BN groups): the enqueued keys equal the numpy-side recomputation with the
    permutation `jax.random.permutation(loss_rng, B)`, BN over each group of the PERMUTED batch,
    un-permuted; without the shuffle, with the view rng's permutation, or without the un-permute,
    the keys differ (the shuffle is real and uses the loss rng)."""
    exp, states = run["exp"], run["states"]
    st, r = states[0], refs[0]
    perm = r["perm"]
    assert not np.array_equal(perm, np.arange(B))
    # the permutation mixes the groups (otherwise the group statistics would not change)
    assert any(len(set(perm[g * 4 : g * 4 + 4] // 4)) > 1 for g in range(GROUPS))
    keys = np.asarray(states[1].buffers["queue"][:B])
    np.testing.assert_allclose(keys, r["k"], atol=2e-5)

    target, stats, x = r["target"], st.target_batch_stats, r["views"][1]
    view_rng, _ = loss_rng_of(st, 0)
    no_shuffle = ref_keys(exp, target, stats, x, np.arange(B), GROUPS)
    view_perm = ref_keys(exp, target, stats, x, jax.random.permutation(view_rng, B), GROUPS)
    not_unpermuted = np_normalize(project(exp, target, stats, np.asarray(x)[perm], GROUPS))
    for wrong in (no_shuffle, view_perm, not_unpermuted):
        assert _max_diff(keys, wrong) > 1e-2


def test_one_group_shuffle_makes_no_difference(run, refs):
    """key_bn_group_size = 0 (one group): BN over the whole batch is permutation-invariant, so the shuffled keys
    (method's loss_fn, shuffle on) equal the unshuffled numpy keys — and differ from the 4-group
    shuffled keys of the step."""
    exp, st, r = run["exp"], run["states"][0], refs[0]
    ctx = dataclasses.replace(
        exp.ctx, hp=dataclasses.replace(exp.ctx.hp, shuffle_bn=True, key_bn_group_size=0)
    )
    _, loss_rng = loss_rng_of(st, 0)
    target = {"params": st.target_params, "batch_stats": st.target_batch_stats}

    @jax.jit
    def loss_fn(params, stats, views, buffers, target, rng):
        inp = common.StepInput(
            step=jnp.zeros((), jnp.int32),
            rng=rng,
            views=views,
            batch={},
            buffers=buffers,
            target=target,
        )
        loss, out = mocov2.loss_fn(ctx, params, stats, inp)
        return loss, out.updates["keys"]

    loss, keys = loss_fn(st.params, st.batch_stats, tuple(r["views"]), st.buffers, target, loss_rng)
    # step 0: target == online, so the EMA'd target is the initial target
    plain = ref_keys(exp, st.target_params, st.target_batch_stats, r["views"][1], np.arange(B), 1)
    np.testing.assert_allclose(keys, plain, atol=2e-5)
    np.testing.assert_allclose(float(loss), np_info_nce(r["q"], plain, r["queue"], TAU), **TOL)
    assert _max_diff(keys, r["k"]) > 1e-2
