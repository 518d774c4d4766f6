"""JCL: the step against losses.jcl on directly computed features, the mean-key queue, the λ
schedule, 1 vs 8 devices, the reduction to MoCo v2 at M' = 1, and every jcl_* config.

CPU compiles of the ResNet dominate: one state is initialised once and placed on both meshes, and
the tests share one 3-step run per mesh (module fixture).
"""

import dataclasses
import functools
import importlib.util
import math
import pathlib

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from ssl_jax import configs, optim, train
from ssl_jax.data.device import recipe as device_recipe
from ssl_jax.methods import common, jcl, losses, mocov2
from ssl_jax.parallel import sharding
from tests.helpers import place_state, synthetic_batch, tiny_config

CONFIG_DIR = pathlib.Path(__file__).resolve().parents[2] / "configs"
JCL_CONFIGS = (
    "jcl_imagenet",
    "jcl_imagenet_paper",
    "jcl_imagenet100_r18",
    "jcl_cifar10",
    "jcl_fashion_mnist",
    "jcl_color_fashion_mnist",
)
NUM_KEYS = 3
STEPS = 3


def jcl_config(num_keys: int = NUM_KEYS, **method_config) -> ml_collections.ConfigDict:
    """tiny_config with M' + 1 views; 32 examples at batch 16: 2 steps an epoch, 3 epochs of 6."""
    c = tiny_config("jcl")
    c.data.train_subset = 32
    c.data.views = ("tiny",) * (num_keys + 1)
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=64,
            num_keys=num_keys,
            lam=2.0,
            lam_schedule="linear_epoch",
            shuffle_bn=True,
            query_bn_group_size=0,
            key_bn_group_size=num_keys * 16 // 4,  # 4 key BN groups
        )
    )
    c.method_config.update(method_config)
    c.optim.base_lr = 0.01  # gentle steps: large ones amplify float reduction-order noise (1 vs 8)
    return c


def load_config(name: str, arg: str | None = None):
    spec = importlib.util.spec_from_file_location(name, CONFIG_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_config(arg)


_PROJECTORS = {}


def _projector(model):
    """Jitted train-mode projections `(params, stats, x, groups)` (one compile per shape and
    group count is faster than op-by-op on CPU), shared by the tests."""
    if id(model) not in _PROJECTORS:

        @functools.partial(jax.jit, static_argnums=3)
        def project(params, stats, x, groups):
            out, _ = model.apply(
                {"params": params, "batch_stats": stats},
                x,
                train=True,
                bn_groups=groups,
                use_predictor=False,
                mutable=["batch_stats"],
            )
            return out["projection"]

        _PROJECTORS[id(model)] = project
    return _PROJECTORS[id(model)]


@pytest.fixture(scope="module")
def runs():
    """One initial state, 3 steps on 1 device and on 8: the state, per-step metrics and buffers."""
    config = jcl_config()
    # EMA momentum 0.5: at step 1 the EMA'd target, the un-updated target and the online network
    # are visibly different (the EMA-before-keys check at a step where target != online)
    config.ema.base = 0.5
    exp1 = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    init = jax.device_get(train.init_or_restore(exp1, None))
    out = {"config": config, "init": init}
    for n in (1, 8):
        exp = (
            exp1
            if n == 1
            else train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()))
        )
        state = place_state(init, exp)
        step = train.jit_train_step(exp, state)
        metrics, buffers, states = [], [], [init]
        for i in range(STEPS):
            state, m = step(state, sharding.host_to_global(synthetic_batch(config, i), exp.mesh))
            metrics.append(jax.device_get(m))
            buffers.append(jax.device_get(state.buffers))
            if n == 1:
                states.append(jax.device_get(state))
        out[n] = {
            "exp": exp,
            "metrics": metrics,
            "buffers": buffers,
            "states": states,  # host states before each step (1 device only)
            "final": jax.device_get(state),
        }
    return out


def test_first_step_loss_is_losses_jcl_of_direct_features(runs):
    config, init, run = runs["config"], runs["init"], runs[1]
    exp = run["exp"]
    b = config.global_batch_size
    batch = synthetic_batch(config, 0)
    views = [
        device_recipe.normalize(v, config.data.mean, config.data.std, jnp.float32)
        for v in batch["views"]
    ]
    # the step's randomness, as train.make_train_step derives it: (view_rng, loss_rng) of step 0
    _, loss_rng = jax.random.split(jax.random.fold_in(init.rng, 0))
    project = _projector(exp.ctx.model)
    q = losses.l2_normalize(project(init.params, init.batch_stats, views[0], 1))
    # EMA before keys
    target = optim.ema_update(init.target_params, init.params, exp.ema_schedule(0))
    x = jnp.concatenate(views[1:])  # crop-major
    perm = jax.random.permutation(loss_rng, x.shape[0])  # shuffle-BN over all M'·B keys, 4 groups
    k = project(target, init.target_batch_stats, x[perm], 4)[jnp.argsort(perm)]
    keys = losses.l2_normalize(k.reshape(NUM_KEYS, b, -1))
    lam0 = 2.0 * 1 / 3  # λ·(epoch 0 + 1)/3 epochs
    expected = losses.jcl(q, keys, init.buffers["queue"], 0.2, lam0)
    np.testing.assert_allclose(run["metrics"][0]["train/loss"], expected, rtol=1e-4)
    assert run["metrics"][0]["train/loss"] > losses.jcl(q, keys, init.buffers["queue"], 0.2, 0.0)

    # the queue received μ = mean of the normalised keys, not re-normalised (norm < 1), FIFO
    mu = np.asarray(jnp.mean(keys, axis=0))
    after = run["buffers"][0]
    np.testing.assert_allclose(after["queue"][:b], mu, rtol=1e-3, atol=1e-5)
    np.testing.assert_array_equal(after["queue"][b:], init.buffers["queue"][b:])
    assert int(after["queue_ptr"]) == b and "step" not in after  # λ reads the engine's step
    norms = np.linalg.norm(run["buffers"][1]["queue"][: 2 * b], axis=1)
    assert np.all(norms < 0.999) and np.all(norms > 0.1)
    np.testing.assert_allclose(
        run["metrics"][0]["train/mean_key_norm"], norms[:b].mean(), rtol=1e-4
    )


def _np_jcl(q, keys, queue, tau, lam):
    """The official loss (ce + jcl_loss) in its algebraic form, float64:
    mean_n[−q·μ/τ + log(exp(q·μ/τ + λ/(2τ²)·qᵀΣq) + Σ_k exp(q·n_k/τ))], Σ = biased covariance."""
    q, keys, queue = (np.asarray(a, np.float64) for a in (q, keys, queue))
    mu = keys.mean(axis=0)
    qsq = np.mean(np.einsum("mnd,nd->mn", keys - mu, q) ** 2, axis=0)
    qmu = np.sum(q * mu, axis=1) / tau
    logits = np.concatenate([(qmu + lam / (2 * tau**2) * qsq)[:, None], q @ queue.T / tau], 1)
    top = logits.max(axis=1)
    return float(np.mean(-qmu + top + np.log(np.exp(logits - top[:, None]).sum(axis=1))))


def test_ema_before_keys_where_target_differs_from_online(runs):
    """Step 1 (after one update, target != online): the loss uses keys of
    ema(target, online_at_step_start) — not of the un-updated target, nor of the online network —
    and the state's next target is that EMA."""
    config, run = runs["config"], runs[1]
    exp, st, after = run["exp"], run["states"][1], run["states"][2]
    m = config.ema.base
    leaves = lambda tree: [np.asarray(x, np.float64) for x in jax.tree.leaves(tree)]  # noqa: E731
    moved = max(np.max(np.abs(t - o)) for t, o in zip(leaves(st.target_params), leaves(st.params)))
    assert moved > 1e-3, "online must have moved away from the target after step 0"
    ema = jax.tree.map(
        lambda t, o: m * np.asarray(t) + (1 - m) * np.asarray(o), st.target_params, st.params
    )
    for got, want in zip(leaves(after.target_params), leaves(ema)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)

    views = [
        device_recipe.normalize(v, config.data.mean, config.data.std, jnp.float32)
        for v in synthetic_batch(config, 1)["views"]
    ]
    _, loss_rng = jax.random.split(jax.random.fold_in(st.rng, 1))
    project = _projector(exp.ctx.model)
    q = np.asarray(losses.l2_normalize(project(st.params, st.batch_stats, views[0], 1)))
    x = jnp.concatenate(views[1:])  # crop-major
    perm = jax.random.permutation(loss_rng, x.shape[0])

    def keys_of(target):
        k = np.asarray(project(target, st.target_batch_stats, x[perm], 4)[jnp.argsort(perm)])
        k = k.reshape(NUM_KEYS, config.global_batch_size, -1)
        return k / np.linalg.norm(k, axis=-1, keepdims=True)

    queue = np.asarray(st.buffers["queue"])
    lam1 = 2.0 * 1 / 3  # step 1 is in epoch 0
    loss = float(run["metrics"][1]["train/loss"])
    np.testing.assert_allclose(loss, _np_jcl(q, keys_of(ema), queue, 0.2, lam1), rtol=1e-4)
    for wrong in (st.target_params, st.params):  # keys of the un-updated target / of online
        assert abs(_np_jcl(q, keys_of(wrong), queue, 0.2, lam1) - loss) > 5e-3 * abs(loss)


def test_lambda_metric_follows_the_epoch_ramp(runs):
    # 2 steps per epoch, 6 steps → 3 epochs: λ·1/3 at steps 0, 1 and λ·2/3 at step 2
    lams = [m["train/lambda"] for m in runs[1]["metrics"]]
    np.testing.assert_allclose(lams, [2 / 3, 2 / 3, 4 / 3], rtol=1e-6)
    assert int(runs[8]["final"].step) == STEPS


def test_one_vs_eight_devices(runs):
    one, eight = runs[1], runs[8]
    np.testing.assert_allclose(
        [m["train/loss"] for m in one["metrics"]],
        [m["train/loss"] for m in eight["metrics"]],
        rtol=2e-4,
        atol=1e-5,
    )
    for a, b in zip(jax.tree.leaves(one["final"].params), jax.tree.leaves(eight["final"].params)):
        np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-5)
    for name in one["final"].buffers:
        np.testing.assert_allclose(
            one["final"].buffers[name], eight["final"].buffers[name], rtol=2e-3, atol=2e-5
        )


def _ctx(steps_per_epoch, total_steps, **hp):
    return common.StepContext(
        model=None,
        mesh=None,
        config=None,
        hp=jcl.Hparams(**hp),
        num_train_examples=0,
        total_steps=total_steps,
        steps_per_epoch=steps_per_epoch,
    )


def test_lambda_schedule_at_epoch_boundaries():
    # 10 steps at 4 per epoch: 3 epochs (the last one partial), λ·(e + 1)/3
    ctx = _ctx(4, 10, lam=4.0)
    got = [float(jcl.lam_at(ctx, s)) for s in (0, 3, 4, 7, 8, 9, 12)]
    np.testing.assert_allclose(got, [4 / 3, 4 / 3, 8 / 3, 8 / 3, 4.0, 4.0, 4.0], rtol=1e-6)
    ctx = _ctx(5, 1000, lam=2.0)  # 200 epochs, as the official run: λ/200 … λ
    np.testing.assert_allclose(
        [float(jcl.lam_at(ctx, s)) for s in (0, 4, 5, 999)], [0.01, 0.01, 0.02, 2.0], rtol=1e-6
    )
    const = _ctx(4, 10, lam=4.0, lam_schedule="constant")
    assert [float(jcl.lam_at(const, s)) for s in (0, 9)] == [4.0, 4.0]
    assert jcl.num_epochs(_ctx(4, 8)) == 2 and jcl.num_epochs(_ctx(4, 3)) == 1


def test_one_key_is_mocov2(runs):
    """M' = 1: Σ = 0 and μ = k, so JCL's loss is MoCo v2's InfoNCE on the same inputs."""
    config, init, exp = runs["config"], runs["init"], runs[1]["exp"]
    views = [
        device_recipe.normalize(v, config.data.mean, config.data.std, jnp.float32)
        for v in synthetic_batch(config, 0)["views"][:2]
    ]
    target = {"params": init.target_params, "batch_stats": init.target_batch_stats}
    rng = jax.random.PRNGKey(3)
    moco_hp = mocov2.Hparams(
        temperature=0.2,
        queue_size=64,
        shuffle_bn=True,
        query_bn_group_size=0,
        key_bn_group_size=4,
    )
    inp = common.StepInput(
        step=jnp.zeros((), jnp.int32),
        rng=rng,
        views=tuple(views),
        batch={},
        buffers=init.buffers,
        target=target,
    )
    args = (init.params, init.batch_stats, inp)
    loss_jcl, out_jcl = jcl.loss_fn(
        dataclasses.replace(
            exp.ctx, hp=dataclasses.replace(exp.ctx.hp, num_keys=1, key_bn_group_size=4)
        ),
        *args,
    )
    loss_moco, out_moco = mocov2.loss_fn(dataclasses.replace(exp.ctx, hp=moco_hp), *args)
    np.testing.assert_allclose(loss_jcl, loss_moco, rtol=1e-5)
    np.testing.assert_allclose(out_jcl.updates["keys"], out_moco.updates["keys"], atol=1e-6)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (lambda c: setattr(c.data, "views", ("tiny",) * 3), "needs num_keys \\+ 1 = 4"),
        (
            lambda c: (
                c.data.recipes.update(other=c.data.recipes.tiny)
                or setattr(c.data, "views", ("tiny", "tiny", "tiny", "other"))
            ),
            "one recipe",
        ),
        (lambda c: c.method_config.update(lam_schedule="cosine"), "lam_schedule"),
        (lambda c: c.method_config.update(queue_size=72), "queue_size=72"),
        (lambda c: c.method_config.update(num_keys=0), "num_keys=0"),
        (lambda c: c.method_config.update(key_bn_group_size=5), "key_bn_group_size=5 must divide"),
    ],
)
def test_bad_configs_fail_before_compiling(override, message):
    config = jcl_config()
    override(config)
    with pytest.raises(configs.ConfigError, match=message):
        train.build_experiment(config)


@pytest.mark.parametrize("name", JCL_CONFIGS)
def test_configs_build_with_runlocal(name):
    exp = train.build_experiment(load_config(name, "runlocal"))
    hp = exp.ctx.hp
    assert exp.config.method == "jcl" and len(exp.config.data.views) == hp.num_keys + 1
    assert len(set(exp.config.data.views)) == 1
    exp = train.build_experiment(load_config(name, "keys=2,runlocal"))
    assert exp.ctx.hp.num_keys == 2 and len(exp.config.data.views) == 3


def test_config_numbers():
    code, paper, r18 = (load_config(n) for n in JCL_CONFIGS[:3])
    assert (
        code.method_config.num_keys,
        code.method_config.lam,
        code.global_batch_size,
        code.optim.base_lr,
    ) == (4, 2.0, 256, 0.03)
    assert (
        paper.method_config.num_keys,
        paper.method_config.lam,
        paper.global_batch_size,
        paper.optim.base_lr,
    ) == (5, 4.0, 512, 0.06)
    assert (r18.model.backbone, r18.method_config.num_keys, r18.method_config.lam) == (
        "resnet18",
        9,
        4.0,
    )
    for c in (code, paper, r18):
        assert c.method_config.temperature == 0.2 and c.method_config.queue_size == 65536
        assert c.ema.base == 0.999 and c.method_config.lam_schedule == "linear_epoch"


def _flat(config) -> dict:
    def walk(d, prefix=""):
        for k, v in d.items():
            if isinstance(v, dict):
                yield from walk(v, f"{prefix}{k}.")
            else:
                yield f"{prefix}{k}", v

    return dict(walk(config.to_dict()))


@pytest.mark.parametrize("arg", [None, "runlocal"])
def test_fashion_mnist_config_differs_from_mocov2_only_in_the_method(arg):
    """The JCL vs MoCo v2 comparison is fair: same data, encoder, optimiser, budget and queue."""
    a, b = (
        _flat(load_config("jcl_fashion_mnist", arg)),
        _flat(load_config("mocov2_fashion_mnist", arg)),
    )
    differ = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
    assert differ == {
        "method",
        "data.views",
        "method_config.num_keys",
        "method_config.lam",
        "method_config.lam_schedule",
        # 8 key BN groups in both: MoCo's 256 keys in groups of 32, JCL's M'·256 in groups of M'·32
        "method_config.key_bn_group_size",
    }
    a_views = load_config("jcl_fashion_mnist", arg).data.views
    assert a_views == ("fashion",) * 5


@pytest.mark.parametrize("arg", [None, "runlocal"])
def test_color_fashion_mnist_config_differs_from_mocov2_only_in_the_method(arg):
    """The same comparison on color_fashion_mnist: `jcl_color_fashion_mnist.py` against
    `mocov2_color_fashion_mnist.py` (same MoCo v2 recipe at 32 px, encoder, optimiser and queue).
    Under `:runlocal` the baseline shrinks its queue to 256; JCL keeps 4096, as `jcl_fashion_mnist`."""
    a, b = (
        _flat(load_config("jcl_color_fashion_mnist", arg)),
        _flat(load_config("mocov2_color_fashion_mnist", arg)),
    )
    differ = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
    expected = {
        "method",
        "data.views",
        "method_config.num_keys",
        "method_config.lam",
        "method_config.lam_schedule",
        "method_config.key_bn_group_size",
    }
    assert differ == (expected | {"method_config.queue_size"} if arg else expected)
    assert load_config("jcl_color_fashion_mnist", arg).data.views == ("mocov2",) * 5


@pytest.mark.slow
def test_fashion_mnist_runlocal_end_to_end(tmp_path):
    from ssl_jax.output.writers import read_metrics

    config = load_config("jcl_fashion_mnist", "runlocal")
    config.total_steps = 2
    config.evals.knn.every_steps = -1
    state = train.train_and_evaluate(config, str(tmp_path))
    assert int(jax.device_get(state.step)) == 2
    records = [r for r in read_metrics(str(tmp_path)) if "train/loss" in r]
    assert records and all(math.isfinite(r["train/loss"]) for r in records)
    assert all(r["train/lambda"] == pytest.approx(2.0) for r in records)  # 1 epoch: λ·1/1
    assert all(r["train/mean_key_norm"] < 1.0 for r in records)
