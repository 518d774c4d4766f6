"""SCE and ReSSL: the step against the losses, view modes, queue, EMA timing, devices, configs."""

import glob
import importlib.util
import os

import jax
import ml_collections
import numpy as np
import pytest

from ssl_jax import configs, optim, train
from ssl_jax.config_checks import ConfigError
from ssl_jax.data import datasets
from ssl_jax.data.device import recipe as device_recipe
from ssl_jax.methods import METHODS, common, losses, memory, sce
from ssl_jax.parallel import sharding
from ssl_jax.state import state_shardings
from tests.helpers import TINY_RECIPE, tiny_config

B = 16
LOCAL_RECIPE = (
    {"op": "random_resized_crop", "size": 8, "scale": (0.1, 0.5)},
    {"op": "horizontal_flip", "p": 0.5},
)
CONFIG_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "configs")


def sce_config(method="sce", num_local=0, predictor=False, **method_config):
    """tiny_config with 2 global 16-px views (+ `num_local` 8-px local views), SGD lr 0.01 (gentle
    steps: large ones amplify the float reduction-order noise between 1 and 8 devices)."""
    c = tiny_config("mocov2")
    c.method = method
    c.optim.base_lr = 0.01
    fields = dict(temperature=0.1, temperature_m=0.05, queue_size=64, shuffle_bn=False)
    if method == "sce":
        fields["coeff"] = 0.5
    fields.update(method_config)
    c.method_config = ml_collections.ConfigDict(fields)
    c.data.recipes = ml_collections.ConfigDict({"tiny": TINY_RECIPE, "local": LOCAL_RECIPE})
    c.data.views = ("tiny", "tiny") + ("local",) * num_local
    c.optim.name = "sgd"
    if predictor:
        c.model.predictor = ml_collections.ConfigDict(
            dict(
                enabled=True,
                hidden_dims=(32,),
                out_dim=16,
                hidden_bias=False,
                last_bias=False,
                last_bn=False,
                use_bn=True,
            )
        )
    return c


def _batch(config, step):
    rng = np.random.default_rng(step)
    sizes = [16 if name == "tiny" else 8 for name in config.data.views]
    views = tuple(
        rng.integers(0, 256, size=(B, s, s, config.data.channels), dtype=np.uint8) for s in sizes
    )
    index = (np.arange(B) + step * B) % config.data.train_subset
    return {"views": views, "index": index.astype(np.int32), "label": (index % 10).astype(np.int32)}


_INITIAL_STATES = {}


def _initial_state(exp):
    """`train.init_or_restore(exp, None)` and its host copy, compiled once per state layout.

    On CPU the jitted init spends most of its time compiling partitionable threefry for every
    parameter (~40 s on a loaded 2-core machine, 5× the non-partitionable draw and 15× the
    forward). Tests only need *an* initial state: it is drawn with non-partitionable threefry (the
    train step keeps the default) and cached per layout (model, optimiser, seed, buffers — not the
    loss or the device count); later runs place the host copy with the engine's shardings."""
    c = exp.config
    key = (c.model.to_json(), c.optim.to_json(), c.seed, c.method_config.queue_size)
    key += (c.ema.target_init,)
    if key not in _INITIAL_STATES:
        with jax.threefry_partitionable(False):
            state = train.init_or_restore(exp, None)
        _INITIAL_STATES[key] = jax.device_get(state)
        return state, _INITIAL_STATES[key]
    host = _INITIAL_STATES[key]
    shardings = state_shardings(host, exp.mesh, exp.method.buffer_specs(exp.ctx))
    return jax.device_put(host, shardings), host


def _run(config, devices=None, steps=1):
    """(experiment, host copy of the initial state, final state, per-step host metrics)."""
    mesh = sharding.make_mesh(jax.devices()[:1] if devices is None else devices)
    exp = train.build_experiment(config, mesh=mesh)
    state, init = _initial_state(exp)
    step = train.jit_train_step(exp, state)
    metrics = []
    for i in range(steps):
        state, m = step(state, sharding.host_to_global(_batch(config, i), mesh))
        metrics.append(jax.device_get(m))
    return exp, init, state, metrics


_FORWARDS = {}


def _forward(exp, params, stats, x):
    """Train-mode model outputs (jitted once per model and input shape, shared by the tests)."""
    key = exp.config.model.to_json()
    if key not in _FORWARDS:
        model = exp.ctx.model

        def forward(params, stats, x):
            variables = {"params": params, "batch_stats": stats}
            return model.apply(variables, x, train=True, mutable=["batch_stats"])[0]

        _FORWARDS[key] = jax.jit(forward)
    return _FORWARDS[key](params, stats, x)


def _direct(exp, init, batch):
    """The step-0 loss and keys recomputed from the model and `losses`, without shuffle-BN (the same
    result when the target forward uses one BN group: permute, SyncBN, un-permute)."""
    config, hp = exp.config, exp.ctx.hp
    views = [device_recipe.normalize(v, config.data.mean, config.data.std) for v in batch["views"]]
    keys = {}
    for i in sce.key_views(hp):  # the target's projection (its predictor output is not used)
        out = _forward(exp, init.target_params, init.target_batch_stats, views[i])
        keys[i] = memory.l2_normalize(out["projection"])
    queries = {}
    for j in sce.online_views(hp, len(views)):
        out = _forward(exp, init.params, init.batch_stats, views[j])
        queries[j] = memory.l2_normalize(out.get("prediction", out["projection"]))
    queue = init.buffers["queue"]
    if config.method == "sce":
        pair = lambda q, k: losses.sce(  # noqa: E731
            q, k, queue, hp.temperature, hp.temperature_m, hp.coeff
        )
    else:
        pair = lambda q, k: losses.ressl(q, k, queue, hp.temperature, hp.temperature_m)  # noqa: E731
    pairs = sce.pairs(hp, len(views))
    loss = np.mean([float(pair(queries[j], keys[i])) for j, i in pairs])
    return loss, np.concatenate([np.asarray(keys[i]) for i in sce.key_views(hp)])


# --------------------------------------------------------------------------------------------------
# Cheap checks (no model compile)
# --------------------------------------------------------------------------------------------------


def test_registered_and_ema_after_optimiser():
    assert METHODS["sce"] is sce and METHODS["ressl"].loss_fn is sce.loss_fn
    assert sce.EMA_BEFORE_KEYS is False and METHODS["ressl"].EMA_BEFORE_KEYS is False
    # the authors' ReSSL: the same functions and hyper-parameters, the EMA before the keys
    authors = METHODS["ressl_authors"]
    assert authors.loss_fn is sce.loss_fn and authors.Hparams is METHODS["ressl"].Hparams
    assert authors.EMA_BEFORE_KEYS is True and authors.USES_TARGET is True


def test_view_pairs():
    asym = sce.Hparams(symmetric=False)
    assert sce.key_views(asym) == (0,)
    assert sce.pairs(asym, 2) == ((1, 0),)
    assert sce.pairs(asym, 4) == ((1, 0), (2, 0), (3, 0))  # official: every online crop vs k_0
    sym = sce.Hparams(symmetric=True, num_global_crops=2)
    assert sce.pairs(sym, 2) == ((1, 0), (0, 1))
    multicrop = sce.pairs(sym, 6)
    assert len(multicrop) == 2 * 5 and all(j != i and i < 2 for j, i in multicrop)
    assert sce.keys_per_step(sym, 256) == 512


def test_eq9_form_equals_official_with_tied_weights():
    rng = np.random.default_rng(0)
    q, k, queue = (memory.l2_normalize(rng.normal(size=s)) for s in ((8, 16), (8, 16), (32, 16)))
    for mask_self in (False, True):
        official = sce.Hparams(coeff=0.3, mask_self=mask_self).pair_loss(q, k, queue)
        eq9 = sce.Hparams(coeff=0.3, mu=0.7, eta=0.7, loss_form="eq9", mask_self=mask_self)
        np.testing.assert_allclose(eq9.pair_loss(q, k, queue), official, rtol=1e-5)
    np.testing.assert_allclose(
        sce.Hparams(mask_self=True).pair_loss(q, k, queue),
        losses.sce(q, k, queue, 0.1, 0.07, 0.5, mask_self=True),
        rtol=1e-6,
    )


@pytest.mark.parametrize(
    ("method", "override", "message"),
    [
        ("sce", dict(symmetric=True, queue_size=48), "queue_size=48 .*number of target views"),
        ("sce", dict(loss_form="eq10"), "loss_form='eq10'"),
        ("sce", dict(shuffle_bn=True, key_bn_group_size=3), "key_bn_group_size=3 must divide"),
        ("ressl", dict(coeff=0.5), "coeff"),
        ("sce", dict(symmetric=True, num_global_crops=3), "num_global_crops=3"),
    ],
)
def test_bad_configs_fail_before_compiling(method, override, message):
    config = sce_config(method)
    config.method_config.update(override)
    with pytest.raises(configs.ConfigError, match=message):
        train.build_experiment(config)


def test_predictor_width_must_match_projection():
    config = sce_config(predictor=True)
    config.model.predictor.out_dim = 8
    with pytest.raises(configs.ConfigError, match="predictor.out_dim=8"):
        train.build_experiment(config)


def _config_files():
    return sorted(
        glob.glob(os.path.join(CONFIG_DIR, "sce_*.py"))
        + glob.glob(os.path.join(CONFIG_DIR, "ressl_*.py"))
    )


def _load(path):
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_config_files_listed():
    names = {os.path.basename(p)[:-3] for p in _config_files()}
    for dataset in (
        "imagenet",
        "imagenet100",
        "cifar10",
        "cifar100",
        "stl10",
        "tiny_imagenet",
        "fashion_mnist",
    ):
        assert {f"sce_{dataset}", f"ressl_{dataset}"} <= names, dataset
    assert "sce_imagenet_multicrop" in names


@pytest.mark.parametrize("path", _config_files(), ids=lambda p: os.path.basename(p)[:-3])
def test_config_builds(path):
    """`:runlocal` builds (on the 8 test devices) on Fashion-MNIST or its colour set; the full config
    builds where its data need no folder, and names its method."""
    module = _load(path)
    local = module.get_config("runlocal")
    exp = train.build_experiment(local)
    name = os.path.basename(path)
    expected = "ressl_authors" if name.startswith("ressl_authors") else name.split("_")[0]
    assert local.method == expected
    assert local.data.name in datasets.FASHION_NAMES  # data this machine has (or generates)
    assert exp.ctx.hp.queue_size % sce.keys_per_step(exp.ctx.hp, local.global_batch_size) == 0
    full = module.get_config()
    if full.data.name == "image_folder":
        with pytest.raises(datasets.DataError, match="data_dir"):
            train.build_experiment(full)
    else:
        train.build_experiment(full)


def test_imagenet_configs_match_the_paper():
    c = _load(os.path.join(CONFIG_DIR, "sce_imagenet.py")).get_config()
    hp = common.method_hparams(sce, c)
    assert (hp.symmetric, hp.temperature, hp.temperature_m, hp.coeff, hp.queue_size) == (
        True,
        0.1,
        0.07,
        0.5,
        65536,
    )
    assert c.global_batch_size == 4096 and c.optim.name == "lars" and c.optim.exclude_1d
    peak = c.optim.base_lr * c.global_batch_size / 256
    assert np.isclose(peak, 4.8) and c.optim.warmup_epochs == 10 and c.optim.weight_decay == 1e-6
    assert (c.ema.base, c.ema.schedule) == (0.99, "cosine") and c.model.predictor.enabled
    m = _load(os.path.join(CONFIG_DIR, "sce_imagenet_multicrop.py")).get_config()
    sizes = [m.data.recipes[v][0]["size"] for v in m.data.views]
    scales = [tuple(m.data.recipes[v][0]["scale"]) for v in m.data.views]
    assert sizes == [224, 224, 192, 160, 128, 96]
    assert scales[2:] == [(0.172, 0.86), (0.143, 0.715), (0.114, 0.571), (0.086, 0.429)]


# --------------------------------------------------------------------------------------------------
# Train steps (each test compiles one tiny ResNet step)
# --------------------------------------------------------------------------------------------------


def _asymmetric_config():
    """Weak view 0 → target, strong view 1 → online, SyncBN without shuffle (shuffle-BN with
    SplitBN: `test_split_bn_splits_the_target_trunk_only` and the configs' 1-vs-8 test), EMA momentum 0 (the
    target equals the UPDATED online params iff the EMA runs after the optimiser step)."""
    config = sce_config(shuffle_bn=False)
    config.ema.base = 0.0
    return config


@pytest.fixture(scope="module")
def asymmetric_runs():
    """2 steps of `_asymmetric_config` on 1 and on 8 devices (shared by two tests: each compile of a
    step costs ~20-50 s on a loaded CPU)."""
    config = _asymmetric_config()
    return config, [
        _run(config, devices, steps=2) for devices in (jax.devices()[:1], jax.devices())
    ]


def test_asymmetric_step_is_the_sce_loss_and_ema_follows_the_optimiser(asymmetric_runs):
    config, ((exp, init, state, metrics), _) = asymmetric_runs
    loss, keys = _direct(exp, init, _batch(config, 0))
    np.testing.assert_allclose(metrics[0]["train/loss"], loss, rtol=1e-4)
    leaves = [jax.tree.leaves(x) for x in (state.target_params, state.params, init.params)]
    for target, online, _ in zip(*leaves):
        np.testing.assert_array_equal(np.asarray(target), np.asarray(online))
    assert any(not np.array_equal(np.asarray(p), p0) for _, p, p0 in zip(*leaves))
    assert int(state.buffers["queue_ptr"]) == 2 * B  # asymmetric: only the weak view's keys
    queue = np.asarray(state.buffers["queue"])
    np.testing.assert_allclose(queue[:B], keys, atol=1e-5)  # step 0's keys, initial target
    np.testing.assert_array_equal(queue[2 * B :], init.buffers["queue"][2 * B :])


def test_an_independent_target_starts_from_its_own_draw():
    """`ema.target_init='independent'` (CEA-LIST/SCE's momentum networks, instantiated on their own,
    sce/models/siamese/momentum_base.py:53-54): the target is a second draw of the same
    initialisers (every weight matrix differs from the online one's, same shape, same spread), the
    online network is the 'copy' run's, and the BN statistics start equal."""
    copy_config, own_config = sce_config(), sce_config()
    own_config.ema.target_init = "independent"
    mesh = sharding.make_mesh(jax.devices()[:1])
    copy, own = (
        _initial_state(train.build_experiment(c, mesh=mesh))[1] for c in (copy_config, own_config)
    )
    for a, b in zip(*map(jax.tree.leaves, (copy.params, own.params))):
        np.testing.assert_array_equal(a, b)
    pairs = list(zip(*map(jax.tree.leaves, (own.params, own.target_params))))
    kernels = [(p, t) for p, t in pairs if p.ndim >= 2]
    assert kernels and all(p.shape == t.shape and not np.allclose(p, t) for p, t in kernels)
    for p, t in kernels:
        if p.size >= 256:
            assert 0.8 < np.std(t) / np.std(p) < 1.25
    for a, b in zip(*map(jax.tree.leaves, (own.batch_stats, own.target_batch_stats))):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ConfigError, match=r"config\.ema\.target_init='same'"):
        optim.check_ema_config({"base": 0.99, "target_init": "same"})


def test_ressl_authors_updates_the_target_before_the_keys():
    """`ressl_authors` (EMA_BEFORE_KEYS) with EMA momentum 0: after one step the target holds the
    online params the step STARTED from (copied before the keys), not the updated ones as with
    `ressl`; the loss is the ReSSL loss of the initial networks."""
    config = sce_config("ressl_authors", shuffle_bn=False)
    config.ema.base = 0.0
    exp, init, state, metrics = _run(config)
    loss, keys = _direct(exp, init, _batch(config, 0))
    np.testing.assert_allclose(metrics[0]["train/loss"], loss, rtol=1e-4)
    leaves = [jax.tree.leaves(x) for x in (state.target_params, state.params, init.params)]
    for target, _, p0 in zip(*leaves):
        np.testing.assert_array_equal(np.asarray(target), p0)
    assert any(not np.array_equal(np.asarray(p), p0) for _, p, p0 in zip(*leaves))
    np.testing.assert_allclose(np.asarray(state.buffers["queue"])[:B], keys, atol=1e-5)


def test_one_vs_eight_devices(asymmetric_runs):
    assert jax.device_count() == 8
    _, ((_, _, state1, m1), (_, _, state8, m8)) = asymmetric_runs
    np.testing.assert_allclose(
        [m["train/loss"] for m in m1], [m["train/loss"] for m in m8], rtol=2e-4, atol=1e-5
    )
    for tree in ("params", "target_params", "batch_stats", "target_batch_stats"):
        pairs = zip(jax.tree.leaves(getattr(state1, tree)), jax.tree.leaves(getattr(state8, tree)))
        for a, b in pairs:
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-3, atol=2e-5)
    for name in ("queue", "queue_ptr"):
        np.testing.assert_allclose(
            np.asarray(state1.buffers[name]), np.asarray(state8.buffers[name]), atol=2e-5
        )
    rows = {s.data.shape[0] for s in state8.buffers["queue"].addressable_shards}
    assert rows == {64 // 8}, "each device holds 1/8 of the queue"


def test_symmetric_multicrop_with_predictor():
    """2 global 16-px crops + 1 local 8-px crop, symmetric, predictor: the step's loss is the mean
    of `losses.sce` over the 4 (online j, target i ≠ j) pairs with the predictor's outputs as
    queries and target projections of the global crops as keys; the queue receives [k_0; k_1]
    (2·B keys) once per step."""
    config = sce_config(
        num_local=1,
        predictor=True,
        symmetric=True,
        num_global_crops=2,
        shuffle_bn=False,
        queue_size=96,
    )
    exp, init, state, metrics = _run(config)
    assert "predictor" in init.params and len(sce.pairs(exp.ctx.hp, 3)) == 4
    loss, keys = _direct(exp, init, _batch(config, 0))
    np.testing.assert_allclose(metrics[0]["train/loss"], loss, rtol=1e-4)
    assert int(state.buffers["queue_ptr"]) == 2 * B
    queue = np.asarray(state.buffers["queue"])
    np.testing.assert_allclose(queue[: 2 * B], keys, atol=1e-5)
    np.testing.assert_array_equal(queue[2 * B :], init.buffers["queue"][2 * B :])


def test_ressl_steps():
    config = sce_config("ressl", shuffle_bn=False)
    exp, init, state, metrics = _run(config, steps=2)
    loss, _ = _direct(exp, init, _batch(config, 0))
    np.testing.assert_allclose(metrics[0]["train/loss"], loss, rtol=1e-4)
    assert np.isfinite(metrics[1]["train/loss"])
    assert int(state.buffers["queue_ptr"]) == 2 * B


@pytest.mark.slow
def test_fashion_mnist_config_runs_end_to_end(tmp_path):
    config = _load(os.path.join(CONFIG_DIR, "sce_fashion_mnist.py")).get_config("runlocal")
    config.total_steps = 2
    config.evals.knn.every_steps = -1
    with jax.threefry_partitionable(False):  # see _initial_state: a 30 s cheaper init compile
        state = train.train_and_evaluate(config, str(tmp_path))
    assert int(state.step) == 2
    assert int(state.buffers["queue_ptr"]) == 2 * config.global_batch_size
