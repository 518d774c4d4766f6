"""InfoMin: the step against a float64 numpy reference of PyContrast's order of operations
(`ContrastTrainer._train_moco` with `RGBMultiHeads`, `JigsawHead` and `RGBMoCo`; PyContrast `pycontrast/learning/contrast_trainer.py` L220):

```
k = normalize(ema(x2));  q = normalize(head(enc(x1)))
q_jig = normalize(fc2(concat(permute(fc1(enc(patches))))))     # fc1: Linear → ReLU → Linear
loss = (1 − β)·CE([q·k, q·queueᵀ]/τ, 0) + β·CE([q_jig·k, q_jig·queueᵀ]/τ, 0)
optimiser;  ema = α·ema + (1 − α)·online;  queue ← k
```
`infomin_color_fashion_mnist:runlocal` (ResNet-18 at width 1/8, batch 32, queue 256, aug "D" with
RandAugment, 27-px jigsaw mosaics) on a 256-image source, the queries and their patches in 4 BN
groups of 8 images (72 patches) and the keys in one (so the reference needs no permutation): its first 3 pipeline batches through the train step on 1 device,
the same run by `train_and_evaluate` on 8 devices; the resume test restores the state of step 2
and repeats step 3.
"""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
import tensorflow as tf

from ssl_jax import checkpoint, configs, train
from ssl_jax.config_checks import ConfigError
from ssl_jax.data.host import augment
from ssl_jax.methods import METHODS, common, infomin
from ssl_jax.parallel import sharding
from tests.helpers import (
    assert_steps_match,
    fashion_source,
    np_ce0,
    np_normalize,
    one_step_on_all_devices,
    place_state,
)

B, Q, TAU, BETA, STEPS = 32, 256, 0.15, 0.5, 3
GROUPS = 4  # query BN groups of 8 images


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return fashion_source(tmp_path_factory.mktemp("infomin_data"))


def runlocal_config(source, arg=""):
    c = configs.load(f"configs/infomin_color_fashion_mnist.py:runlocal{arg}")
    c.data.data_dir, c.data.color_fashion_mnist.cache_dir = source
    c.total_steps = STEPS
    c.log_every_steps = 1
    c.evals = ml_collections.ConfigDict()
    # queries (and their patches) in 4 BN groups, as PyContrast's per-GPU BN; keys in one group
    c.method_config.update(query_bn_group_size=8, key_bn_group_size=0, shuffle_bn=False)
    c.ema.base = 0.5  # the target visibly moves after step 0
    assert c.global_batch_size == B and c.method_config.queue_size == Q
    return c


@pytest.fixture(scope="module")
def runs(source, tmp_path_factory):
    import itertools

    from ssl_jax.data import pipeline
    from ssl_jax.output.writers import read_metrics

    config = runlocal_config(source)
    exp1 = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    init = jax.device_get(train.init_or_restore(exp1, None))
    batches = list(itertools.islice(pipeline.train_iterator(config), STEPS))
    state = place_state(init, exp1)
    step = train.jit_train_step(exp1, state)
    states, metrics = [init], []
    for batch in batches:
        state, m = step(state, sharding.host_to_global(batch, exp1.mesh))
        metrics.append(jax.device_get(m))
        states.append(jax.device_get(state))
    workdir = str(tmp_path_factory.mktemp("infomin_run") / "run")
    final = jax.device_get(train.train_and_evaluate(config, workdir))
    logged = [r for r in read_metrics(workdir) if "train/loss" in r]
    one_step = one_step_on_all_devices(config, states, batches)
    return {
        "config": config,
        "exp": exp1,
        "batches": batches,
        1: {"states": states, "metrics": metrics, "step": step},
        8: {"final": final, "metrics": logged, "one_step": one_step},
    }


def np_jigsaw_head(params, features, order):
    """PyContrast `JigsawHead.forward` in float64: fc1 (Linear → ReLU → Linear) per patch,
    `x[shuffle_ids]` with shuffle_ids = order + 9·image, `view(n_img, -1)`, fc2."""
    dense = lambda p, x: x @ np.asarray(p["kernel"], np.float64) + np.asarray(p["bias"], np.float64)
    head = params["patch_head"]
    x = dense(head["fc_out"], np.maximum(dense(head["fc0"], np.asarray(features, np.float64)), 0))
    k = order.shape[1]
    shuffle_ids = (order + k * np.arange(order.shape[0])[:, None]).reshape(-1)
    return dense(params["fc2"], x[shuffle_ids].reshape(order.shape[0], -1))


@pytest.fixture(scope="module")
def reference(runs):
    """`(state, step) -> (q, k, q_jig)` normalised float64 from the 1-device model: the query and
    key forwards, the backbone on the step's patches and `np_jigsaw_head` with the order drawn
    from the step's key."""
    exp = runs["exp"]

    @jax.jit
    def forward(state, batch):
        inp = train.step_input(exp, state, batch)
        q = common.online_forward(exp.ctx, state.params, state.batch_stats, inp.views[0])[0]
        k = common.forward(exp.ctx, inp.target["params"], state.target_batch_stats, inp.views[1])
        patches = infomin.to_patches(inp.views[2], 3)
        feats = exp.ctx.model.apply(
            {"params": state.params, "batch_stats": state.batch_stats},
            patches,
            method=lambda m, x: m.backbone(x, True, GROUPS),
            mutable=["batch_stats"],
        )[0]
        order = jnp.argsort(jax.random.uniform(jax.random.split(inp.rng)[1], (B, 9)), axis=1)
        return q["projection"], k[0]["projection"], feats, order

    def compute(state, step):
        batch = jax.tree.map(jnp.asarray, runs["batches"][step])
        q, k, feats, order = jax.device_get(forward(state, batch))
        assert sorted(order[0]) == list(range(9)) and not np.array_equal(order[0], order[1])
        q_jig = np_jigsaw_head(state.params["jigsaw"], feats, np.asarray(order))
        return np_normalize(q), np_normalize(k), np_normalize(q_jig)

    return compute


def test_registered_and_the_jigsaw_view(runs):
    assert METHODS["infomin"] is infomin
    assert infomin.USES_TARGET and not infomin.EMA_BEFORE_KEYS
    config = runs["config"]
    assert config.data.views == ("infomin", "infomin", "jigsaw")
    assert [b["views"][2].shape for b in runs["batches"]] == [(B, 27, 27, 3)] * STEPS
    params = runs[1]["states"][0].params
    assert params["jigsaw"]["fc2"]["kernel"].shape == (9 * 32, 32)  # 9 patch embeddings of 32


@pytest.mark.parametrize("step", [0, 1])
def test_step_loss_is_pycontrasts(runs, reference, step):
    """Steps 0 and 1: the logged loss and its parts are (1−β)·CE(q) + β·CE(q_jig) against the
    same key and queue."""
    state = runs[1]["states"][step]
    q, k, q_jig = reference(state, step)
    queue = np.asarray(state.buffers["queue"], np.float64)
    loss_q = np_ce0(np.concatenate([(q * k).sum(1, keepdims=True), q @ queue.T], 1) / TAU)
    loss_jig = np_ce0(np.concatenate([(q_jig * k).sum(1, keepdims=True), q_jig @ queue.T], 1) / TAU)
    m = runs[1]["metrics"][step]
    np.testing.assert_allclose(
        [m["train/loss_instance"], m["train/loss_jigsaw"]], [loss_q, loss_jig], rtol=1e-4
    )
    np.testing.assert_allclose(m["train/loss"], (1 - BETA) * loss_q + BETA * loss_jig, rtol=1e-4)


def test_queue_receives_the_keys_and_ema_follows_the_optimiser(runs, reference):
    s0, s1 = runs[1]["states"][0], runs[1]["states"][1]
    _, k, _ = reference(s0, 0)
    np.testing.assert_allclose(np.asarray(s1.buffers["queue"])[:B], k, atol=1e-5)
    a, t0, p1 = (jax.tree.leaves(t)[0] for t in (s1.target_params, s0.target_params, s1.params))
    np.testing.assert_allclose(
        np.asarray(a), 0.5 * np.asarray(t0) + 0.5 * np.asarray(p1), atol=1e-6
    )


def test_bn_statistics_follow_both_forwards(runs):
    """The encoder's running statistics after step 0 are those of the query forward followed by
    the patches' forward (torch's two `encoder` calls), not of the query forward alone."""
    exp, s0, s1 = runs["exp"], runs[1]["states"][0], runs[1]["states"][1]
    batch = jax.tree.map(jnp.asarray, runs["batches"][0])

    @jax.jit
    def stats(state, batch):
        inp = train.step_input(exp, state, batch)
        _, after_query = common.online_forward(
            exp.ctx, state.params, state.batch_stats, inp.views[0]
        )
        _, after_both = exp.ctx.model.apply(
            {"params": state.params, "batch_stats": after_query},
            infomin.to_patches(inp.views[2], 3),
            method=lambda m, x: m.backbone(x, True, GROUPS),
            mutable=["batch_stats"],
        )
        return after_query, after_both["batch_stats"]

    after_query, after_both = jax.device_get(stats(s0, batch))
    got = s1.batch_stats["backbone"]["bn1"]["mean"]
    np.testing.assert_allclose(got, after_both["backbone"]["bn1"]["mean"], rtol=1e-5, atol=1e-6)
    assert not np.allclose(got, after_query["backbone"]["bn1"]["mean"], rtol=1e-3)


@pytest.mark.own_device_test("infomin")
def test_one_vs_eight_devices(runs):
    m1, m8 = runs[1]["metrics"], runs[8]["metrics"]
    assert [r["step"] for r in m8] == [1, 2, 3]
    for key in ("train/loss", "train/loss_instance", "train/loss_jigsaw"):
        np.testing.assert_allclose(
            [m[key] for m in m1], [m[key] for m in m8], rtol=2e-4, atol=1e-5, err_msg=key
        )
    # The keys of steps 0 and 1 agree to float32 noise; step 2's, after two SGD steps through
    # BN groups of 8 images, to 4e-4 (measured 3.8e-4: the sharded reductions' order; 1.2e-3 on
    # an AVX-512 CPU).
    queue1 = np.asarray(runs[1]["states"][-1].buffers["queue"])
    queue8 = np.asarray(runs[8]["final"].buffers["queue"])
    np.testing.assert_allclose(queue1[: 2 * B], queue8[: 2 * B], atol=2e-5)
    np.testing.assert_allclose(queue1[2 * B : 3 * B], queue8[2 * B : 3 * B], atol=2e-3)
    # per step from the same state (tests/helpers.one_step_on_all_devices): exact
    assert_steps_match(
        runs[8]["one_step"],
        runs[1]["states"],
        runs[1]["metrics"],
        ("train/loss", "train/loss_instance", "train/loss_jigsaw"),
        {"queue": dict(atol=2e-5)},
    )


def test_save_restore_next_step_is_identical(runs, tmp_path):
    exp, step = runs["exp"], runs[1]["step"]
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


def test_to_patches_inverts_the_jigsaw_mosaic():
    """The jigsaw op's mosaic cut by `to_patches`: patch i is the reference crop of cell i."""
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (2, 36, 36, 3), dtype=np.uint8)
    u = rng.random((2, 18)).astype(np.float32)
    mosaic = augment.BATCH_OPS["jigsaw"](tf.constant(images), tf.constant(u), grid=3, patch=9)
    patches = np.asarray(infomin.to_patches(jnp.asarray(mosaic.numpy()), 3))
    assert patches.shape == (18, 9, 9, 3)
    off = np.minimum((u * 4).astype(int), 3)  # cells of 12, offsets 0..3
    for n in range(2):
        for i in range(9):
            top, left = (i // 3) * 12 + off[n, i], (i % 3) * 12 + off[n, 9 + i]
            np.testing.assert_array_equal(
                patches[n * 9 + i], images[n, top : top + 9, left : left + 9]
            )


def test_without_jigsaw_two_views_and_no_head(source):
    config = runlocal_config(source, ",jigsaw=False")
    assert config.data.views == ("infomin", "infomin") and not config.method_config.jigsaw
    exp = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    assert exp.ctx.model.jigsaw is None


def test_jigsaw_needs_its_view(source):
    config = runlocal_config(source)
    config.data.views = ("infomin", "infomin")
    with pytest.raises(ConfigError, match="needs a third view"):
        train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    config.data.views = ("infomin", "infomin", "infomin")
    with pytest.raises(ConfigError, match="must end with a 'jigsaw' op"):
        train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))


def test_imagenet_preset_and_pycontrasts_large_batch_rule():
    c = configs.load("configs/infomin_imagenet.py")
    assert (c.global_batch_size, c.optim.base_lr, c.optim.warmup_epochs) == (256, 0.03, 0.0)
    assert c.method_config.temperature == TAU and c.method_config.queue_size == 65536
    assert [op["op"] for op in c.data.recipes.jigsaw] == [
        "random_resized_crop",
        "horizontal_flip",
        "jigsaw",
    ]
    assert (c.data.recipes.jigsaw[0]["size"], dict(c.data.recipes.jigsaw[2])) == (
        255,
        {"op": "jigsaw", "grid": 3, "patch": 64},
    )
    assert (c.optim.epoch_offset, c.optim.lr_scaling) == (1.0, "none")
    big = configs.load("configs/infomin_imagenet.py:batch=512")
    assert (big.global_batch_size, big.optim.warmup_epochs) == (512, 5.0)
    # PyContrast scales no lr with the batch (`docs/RUN.md` L29 sets 0.06 by hand)
    assert (big.optim.base_lr, big.optim.warmup_from, big.optim.warmup_form) == (
        0.03,
        0.01,
        "pycontrast",
    )
    multi_node = configs.load("configs/infomin_imagenet.py:batch=512,lr=0.06")
    assert multi_node.optim.final_lr == pytest.approx(0.06e-3)


def test_large_batch_schedule_is_pycontrasts():
    """`batch=512,lr=0.06`: per-iteration warm-up from 0.01 to the cosine at epoch 5, then the
    cosine of epochs 6..200 of 200 (`train_options.py` L43–57, `base_trainer.py` L66–89)."""
    from tests.test_optim import _lr_schedule, _pycontrast_lrs

    c = configs.load("configs/infomin_imagenet.py:batch=512,lr=0.06")
    spe, epochs = 3, int(c.num_epochs)
    lr = _lr_schedule(c.optim, total_steps=spe * epochs, steps_per_epoch=spe, global_batch_size=512)
    steps = np.arange(0, spe * epochs, 7)
    expected = _pycontrast_lrs(0.06, epochs, spe, warm_epochs=5)[steps]
    got = np.asarray(jax.vmap(lr)(jnp.asarray(steps)))
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-8)
