"""InterCLR: the step against a float64 numpy reference written from the official order of operations
(mmselfsup 0.x `interclr_moco.py`, `interclr_memory.py`):

```
target = m·target + (1−m)·online                 # BEFORE the keys (MoCo v2)
q = normalize(online(x_q)); k = normalize(target(x_k))
L_intra = CE([q·k, q·queueᵀ]/τ, 0)
p ∈ cluster(labels[idx]) (uniform, may be idx);  n ⊂ pool \\ cluster(labels[idx])
L_inter = CE([q·bank[p] − m, q·bank[n]]/τ, 0)   # m = −0.5 adds 0.5
loss = 0.75·L_intra + 0.25·L_inter
queue ← k; bank[idx] = normalize((1−μ)·bank[idx] + μ·k); labels[idx] = argmax centroids·k
centroids = cluster means every `centroid_every_steps`; small clusters dissolved / refilled
```
A tiny Fashion-MNIST run (64 images, 4 clusters) prepared as a fresh run (real eval batches through
the query encoder, k-means on device), then 3 steps on 1 and on 8 devices; the resume test stops a
run after 2 steps and restarts it.
"""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from ssl_jax import configs, train
from ssl_jax.methods import METHODS, common, interclr
from ssl_jax.methods.negatives import clustering
from ssl_jax.parallel import sharding
from tests.helpers import np_ce0, np_normalize, place_state, synthetic_batch, tiny_config

N, B, C, K, POOL = 64, 16, 4, 8, 24
TAU, MARGIN = 0.2, -0.5
STEPS = 3


def interclr_config(**method_config):
    c = tiny_config("mocov2")
    c.method = "interclr"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=TAU,
            queue_size=64,
            inter_temperature=TAU,
            margin=MARGIN,
            intra_weight=0.75,
            inter_weight=0.25,
            num_clusters=C,
            num_negatives=K,
            pool_size=POOL,
            sampler="semihard",
            bank_size=N,
            bank_momentum=1.0,
            centroid_every_steps=2,
            min_cluster_size=2,
            kmeans_iters=5,
            query_bn_group_size=0,
            key_bn_group_size=0,
            shuffle_bn=False,  # one BN group: the keys can be recomputed without the permutation
        )
    )
    c.method_config.update(method_config)
    c.ema.base = 0.5  # at step 1 the EMA'd target differs visibly from both networks
    c.optim.base_lr = 0.01  # gentle steps: large ones amplify float reduction-order noise
    return c


@pytest.fixture(scope="module")
def runs():
    config = interclr_config()
    exp1 = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    state = train.prepare_fresh_state(exp1, train.init_or_restore(exp1, None))
    init = jax.device_get(state)
    out = {"config": config, "init": init, "exp": exp1}
    for n in (1, 8):
        exp = (
            exp1
            if n == 1
            else train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()))
        )
        state = place_state(init, exp)
        step = train.jit_train_step(exp, state)
        states, metrics = [init], []
        for i in range(STEPS):
            state, m = step(state, sharding.host_to_global(synthetic_batch(config, i), exp.mesh))
            metrics.append(jax.device_get(m))
            states.append(jax.device_get(state))
        out[n] = {"states": states, "metrics": metrics}
    return out


def test_registered_with_moco_timing():
    assert METHODS["interclr"] is interclr
    assert interclr.EMA_BEFORE_KEYS and interclr.USES_TARGET


def test_prepared_bank_labels_and_centroids(runs):
    """Before step 0: unit bank rows, every cluster non-empty, centroids = the clusters' means."""
    buffers = runs["init"].buffers
    bank, labels = np.asarray(buffers["bank"], np.float64), np.asarray(buffers["labels"])
    np.testing.assert_allclose(np.linalg.norm(bank, axis=1), 1.0, rtol=1e-5)
    assert set(labels.tolist()) == set(range(C))
    means = np.stack([bank[labels == c].mean(0) for c in range(C)])
    np.testing.assert_allclose(buffers["centroids"], means, atol=1e-5)


def _inputs(state, config, step):
    """StepInput of `step` (= state.step) as the train step builds it (`train.step_input`: EMA
    before the keys) → (experiment, input, the EMA'd target params, the prepared views)."""
    assert int(state.step) == step
    exp = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    batch = jax.tree.map(jnp.asarray, synthetic_batch(config, step))
    inp = jax.jit(lambda s, b: train.step_input(exp, s, b))(state, batch)
    return exp, inp, inp.target["params"], inp.views


def test_step_loss_is_the_official_formula(runs):
    """Step 1 (target ≠ online): the loss equals 0.75·InfoNCE + 0.25·MarginNCE recomputed in numpy
    from the model's q, the EMA'd target's k, the queue and the bank rows the samplers picked; the
    picked rows obey the rules (same cluster / other clusters, inside the semi-hard pool, distinct)."""
    config, state = runs["config"], runs[1]["states"][1]
    exp, inp, target, views = _inputs(state, config, 1)
    loss, out = jax.jit(lambda p, s, i: interclr.loss_fn(exp.ctx, p, s, i))(
        state.params, state.batch_stats, inp
    )
    fwd = jax.jit(lambda p, s, x: common.forward(exp.ctx, p, s, x, use_predictor=False)[0])
    q = np_normalize(fwd(state.params, state.batch_stats, views[0])["projection"])
    k = np_normalize(fwd(target, state.target_batch_stats, views[1])["projection"])
    queue = np.asarray(state.buffers["queue"], np.float64)
    bank = np.asarray(state.buffers["bank"], np.float64)
    labels = np.asarray(state.buffers["labels"])
    index = np.asarray(inp.batch["index"])
    pos, neg = np.asarray(out.updates["positive"]), np.asarray(out.updates["negatives"])
    valid = np.asarray(out.updates["valid"])
    own = labels[index]
    assert np.all(labels[pos] == own)
    sims = q @ bank.T
    for b in range(B):
        chosen = neg[b][valid[b]]
        pool = np.argsort(-sims[b], kind="stable")[:POOL]
        eligible = set(pool[labels[pool] != own[b]].tolist())
        assert set(chosen.tolist()) <= eligible and len(set(chosen.tolist())) == len(chosen)
        assert valid[b].sum() == min(K, len(eligible))
    intra = np_ce0(np.concatenate([(q * k).sum(1, keepdims=True), q @ queue.T], 1) / TAU)
    pos_logit = (q * bank[pos]).sum(1, keepdims=True) - MARGIN
    neg_logit = np.where(valid, np.einsum("bd,bkd->bk", q, bank[neg]), -np.inf)
    inter = np_ce0(np.concatenate([pos_logit, neg_logit], 1) / TAU)
    np.testing.assert_allclose(float(loss), 0.75 * intra + 0.25 * inter, rtol=1e-4)
    np.testing.assert_allclose(out.metrics["intra_loss"], intra, rtol=1e-4)
    np.testing.assert_allclose(out.metrics["inter_loss"], inter, rtol=1e-4)
    # and the step logged that loss
    np.testing.assert_allclose(runs[1]["metrics"][1]["train/loss"], float(loss), rtol=1e-5)


def test_buffer_updates(runs):
    """After step 0: the bank row of each sample is its key (μ = 1), its label the centroid with
    the largest dot product, the queue holds the keys; after step 2 (every 2 steps) the centroids
    are the clusters' means (before any small-cluster fix, which this bank does not trigger)."""
    config, states = runs["config"], runs[1]["states"]
    s0, s1 = states[0], states[1]
    _, inp, target, views = _inputs(s0, config, 0)
    exp = runs["exp"]
    fwd = jax.jit(lambda p, s, x: common.forward(exp.ctx, p, s, x, use_predictor=False)[0])
    k = np_normalize(fwd(target, s0.target_batch_stats, views[1])["projection"])
    index = np.asarray(inp.batch["index"])
    np.testing.assert_allclose(np.asarray(s1.buffers["bank"])[index], k, atol=1e-5)
    np.testing.assert_allclose(np.asarray(s1.buffers["queue"])[:B], k, atol=1e-5)
    expected = np.argmax(k @ np.asarray(s0.buffers["centroids"], np.float64).T, axis=1)
    # this bank triggers no small-cluster fix in the first steps (the fix has its own tests in
    # tests/test_clustering.py), so labels and centroids follow the plain rules
    assert int(s1.buffers["cluster_stats"]["num_small_clusters"]) == 0
    np.testing.assert_array_equal(np.asarray(s1.buffers["labels"])[index], expected)
    np.testing.assert_array_equal(s1.buffers["centroids"], s0.buffers["centroids"])  # not step 2
    untouched = np.setdiff1d(np.arange(N), index)
    np.testing.assert_array_equal(
        np.asarray(s1.buffers["bank"])[untouched], np.asarray(s0.buffers["bank"])[untouched]
    )
    s2 = states[2]
    assert int(s2.buffers["cluster_stats"]["num_small_clusters"]) == 0
    bank, labels = np.asarray(s2.buffers["bank"], np.float64), np.asarray(s2.buffers["labels"])
    assert not np.allclose(s2.buffers["centroids"], s1.buffers["centroids"])  # a centroid step
    for c in range(C):
        np.testing.assert_allclose(s2.buffers["centroids"][c], bank[labels == c].mean(0), atol=1e-5)
    m = runs[1]["metrics"][0]
    assert 0.0 <= m["train/label_change_ratio"] <= 1.0 and m["train/largest_cluster"] >= N // C


def test_one_vs_eight_devices(runs):
    m1, m8 = runs[1]["metrics"], runs[8]["metrics"]
    np.testing.assert_allclose(
        [m["train/loss"] for m in m1], [m["train/loss"] for m in m8], rtol=2e-4, atol=1e-5
    )
    for s1, s8 in zip(runs[1]["states"], runs[8]["states"], strict=True):
        np.testing.assert_array_equal(s1.buffers["labels"], s8.buffers["labels"])
        for name in ("bank", "centroids", "queue"):
            np.testing.assert_allclose(
                np.asarray(s1.buffers[name]), np.asarray(s8.buffers[name]), atol=2e-5
            )


def test_online_label_is_the_mixed_row(runs):
    """μ = 0.5: the written row is normalize(0.5·bank[idx] + 0.5·k) and its label is the centroid
    with the largest dot product with THAT row (`interclr_memory.py` L128–139), not with k. Bank
    rows e0, keys ∝ 0.3·e0 + e1, centroids ±e0, ±e1: the mixed row's label is 0, the key's 1."""
    config = interclr_config(bank_momentum=0.5, min_cluster_size=1)
    exp = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    buffers = dict(runs["init"].buffers)
    dim = buffers["bank"].shape[1]
    e0, e1 = np.eye(dim, dtype=np.float32)[:2]
    index = np.arange(B, dtype=np.int32) * (N // B)
    bank = np.asarray(buffers["bank"]).copy()
    bank[index] = e0
    keys = np.tile(np_normalize((0.3 * e0 + e1)[None]), (B, 1)).astype(np.float32)
    buffers.update(bank=jnp.asarray(bank), centroids=jnp.asarray(np.stack([e0, e1, -e0, -e1])))
    inp = common.StepInput(
        step=jnp.int32(0),
        rng=jax.random.PRNGKey(0),
        views=(),
        batch={"index": jnp.asarray(index)},
        buffers=buffers,
        target=None,
    )
    updates = {"keys": jnp.asarray(keys), "query_labels": jnp.zeros(B, jnp.int32)}
    new = jax.jit(lambda i, u: interclr.update_buffers(exp.ctx, i, u))(inp, updates)
    mixed = np_normalize(0.5 * bank[index] + 0.5 * keys)
    np.testing.assert_allclose(np.asarray(new["bank"])[index], mixed, atol=1e-6)
    assert np.all(np.argmax(keys @ np.stack([e0, e1, -e0, -e1]).T, axis=1) == 1)
    np.testing.assert_array_equal(np.asarray(new["labels"])[index], 0)


@pytest.mark.slow
def test_offline_labels_are_kmeans_of_fresh_features(monkeypatch, tmp_path):
    """labels='offline', every epoch (4 steps): `train_and_evaluate` runs `refresh_buffers` after
    step 4 only (not 1-3, 5-7, nor after step 8, the run's last, whose buffers no step reads); its
    labels are the k-means (key: the state's rng and step) of the train split re-embedded by the
    step-4 encoder (eval mode) — not of the bank — and they are the only label change: steps 1-4
    keep the prepared labels, steps 5-8 the refreshed ones."""
    config = interclr_config(labels="offline", offline_every_epochs=1)
    config.total_steps = 8
    config.checkpoint_every_steps = 100
    calls, prepared = [], []
    original_prepare, original_refresh = interclr.prepare_buffers, interclr.refresh_buffers

    def prepare(ctx, state, embedder):
        out = original_prepare(ctx, state, embedder)
        prepared.append(jax.device_get(out.buffers["labels"]))
        return out

    def refresh(ctx, state, embedder):
        before = jax.device_get(state)
        out = original_refresh(ctx, state, embedder)
        calls.append((before, jax.device_get(out.buffers)))
        return out

    monkeypatch.setattr(interclr, "prepare_buffers", prepare)
    monkeypatch.setattr(interclr, "refresh_buffers", refresh)
    final = jax.device_get(train.train_and_evaluate(config, str(tmp_path)))
    assert [int(before.step) for before, _ in calls] == [4]
    before, after = calls[0]
    np.testing.assert_array_equal(before.buffers["labels"], prepared[0])  # steps 1-4: unchanged
    np.testing.assert_array_equal(final.buffers["labels"], after["labels"])  # steps 5-8: unchanged
    np.testing.assert_array_equal(after["bank"], before.buffers["bank"])  # the bank is kept
    exp = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    variables = {"params": before.params, "batch_stats": before.batch_stats}
    fresh = train.train_embedder(exp).embed_rows(
        jnp.zeros((N, exp.ctx.embed_dim), jnp.float32), interclr._embed_fn(exp.ctx.model), variables
    )
    assert not np.allclose(np.asarray(fresh), before.buffers["bank"], atol=1e-3)
    key = jax.random.fold_in(jax.random.fold_in(before.rng, interclr._KMEANS_KEY), 4)
    labels, _ = clustering.kmeans(key, fresh, C, exp.mesh, iters=config.method_config.kmeans_iters)
    np.testing.assert_array_equal(after["labels"], np.asarray(labels))
    stale, _ = clustering.kmeans(key, jnp.asarray(before.buffers["bank"]), C, exp.mesh, iters=5)
    assert not np.array_equal(after["labels"], np.asarray(stale))
    assert not np.array_equal(after["labels"], prepared[0])


def test_paper_config_colour_jitter():
    """`interclr_imagenet_paper.py`: the paper's jitter (saturation factor in [0, 2], hue in
    [−0.5, 0.5], nothing else; p 0.8 as the code); the code's config keeps 0.4/0.4/0.4/0.1."""

    def jitter(name):
        config = configs.load(f"configs/{name}.py:runlocal")
        (op,) = [op for op in config.data.recipes.mocov2 if op["op"] == "color_jitter"]
        return {k: op[k] for k in ("p", "brightness", "contrast", "saturation", "hue")}

    assert jitter("interclr_imagenet_paper") == dict(
        p=0.8, brightness=0.0, contrast=0.0, saturation=1.0, hue=0.5
    )
    assert jitter("interclr_imagenet") == dict(
        p=0.8, brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1
    )


@pytest.mark.parametrize("sampler", ["hard", "random", "semieasy"])
def test_other_samplers_run(runs, sampler):
    """Each sampler's rows obey its rule at the prepared state (the loss stays finite)."""
    config = interclr_config(sampler=sampler)
    state = runs["init"]
    exp, inp, _, _ = _inputs(state, config, 0)
    loss, out = jax.jit(lambda p, s, i: interclr.loss_fn(exp.ctx, p, s, i))(
        state.params, state.batch_stats, inp
    )
    labels = np.asarray(state.buffers["labels"])
    own = labels[np.asarray(inp.batch["index"])]
    neg, valid = np.asarray(out.updates["negatives"]), np.asarray(out.updates["valid"])
    assert np.isfinite(float(loss))
    assert np.all((labels[neg] != own[:, None]) | ~valid)


@pytest.mark.slow
def test_resume_is_exact(tmp_path):
    """Stopped after step 2 and after step 4 (the offline labels' refresh step: 4 steps an epoch),
    restarted each time: the same losses as an uninterrupted run (bank, labels, centroids and the
    sampler keys are in the checkpoint, saved after the refresh; the preparation is not repeated)."""
    from tests.test_train import _losses_by_step

    config = interclr_config(labels="offline", offline_every_epochs=1)
    config.total_steps = 5
    config.checkpoint_every_steps = 100
    train.train_and_evaluate(config, str(tmp_path / "straight"))
    interrupted = str(tmp_path / "interrupted")
    train.train_and_evaluate(config, interrupted, stop_after_steps=2)
    train.train_and_evaluate(config, interrupted, stop_after_steps=2)
    train.train_and_evaluate(config, interrupted)
    straight, resumed = _losses_by_step(str(tmp_path / "straight")), _losses_by_step(interrupted)
    assert sorted(resumed) == list(range(1, 6))
    np.testing.assert_allclose(
        [resumed[s] for s in sorted(resumed)], [straight[s] for s in sorted(straight)], rtol=1e-6
    )


@pytest.mark.slow
def test_fashion_mnist_runlocal_end_to_end(tmp_path, capsys):
    """`interclr_fashion_mnist:runlocal` through `train_and_evaluate`: the bank is prepared (k-means
    time and cluster histogram printed), the cluster metrics are logged, losses are finite."""
    from ssl_jax import configs
    from ssl_jax.output.writers import read_metrics

    config = configs.load("configs/interclr_fashion_mnist.py:runlocal")
    config.total_steps = 2
    config.log_every_steps = 1
    for evaluator in config.evals.values():
        evaluator.every_steps = -1
    train.train_and_evaluate(config, str(tmp_path))
    assert "k-means (8 clusters" in capsys.readouterr().out
    rows = [r for r in read_metrics(str(tmp_path)) if "train/loss" in r]
    assert [r["step"] for r in rows] == [1, 2]
    for r in rows:
        assert np.isfinite(r["train/loss"]) and np.isfinite(r["train/inter_loss"])
        assert 0.0 <= r["train/label_change_ratio"] <= 1.0
        assert r["train/largest_cluster"] >= 256 // 8
