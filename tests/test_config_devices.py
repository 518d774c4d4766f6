"""BN statistics are a property of the run, not of the hardware (issue 12 item 1).

The configs' first step gives the same loss, BN statistics and buffer updates on 1 and on 8
devices: BN groups are counted in images (`query_bn_group_size`, `key_bn_group_size`), so a config
does not change its maths with the device count. One config stands for each distinct BN structure
among the configs (method family; online and key encoder grouped or not; group scope; shuffle), so
the check covers every config's setting at the cost of a few compiles; the model is shrunk to a
ResNet-18 at width 1/8 on 16-px synthetic views and only the step's forward (`method.loss_fn`, with
the views and target the engine builds) is compared. A method whose own tests run its configs on 1
and 8 devices marks that test `@pytest.mark.own_device_test("<method>")` (CMC, CMCv2, CMCRing,
InfoMin): its representatives here are skipped when that test is collected too. And on one device
MoCo v2's shuffle really changes the key BN statistics.
"""

import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ssl_jax import configs, train
from ssl_jax.methods import METHODS, common, mocov2
from ssl_jax.parallel import sharding
from ssl_jax.state import state_shardings
from tests.helpers import ROOT, runlocal_configs, synthetic_batch

FAMILY = {"ressl": "sce", "ressl_authors": "sce"}  # same machinery, only the pair loss differs


def _signature(config) -> tuple:
    """What decides how a step's batch is grouped for BN (sizes aside)."""
    hp = common.method_hparams(METHODS[config.method], config)  # the method's defaults filled in
    return (
        FAMILY.get(config.method, config.method),
        hp.query_bn_group_size > 0,
        getattr(hp, "key_bn_group_size", 0) > 0,
        hp.bn_group_scope,
        getattr(hp, "shuffle_bn", False),
    )


def _representatives() -> dict[str, tuple]:
    """{config file name: signature}, the first config (by name) of each distinct signature."""
    seen, out = set(), {}
    for name, config in runlocal_configs().items():
        sig = _signature(config)
        if sig not in seen:
            seen.add(sig)
            out[name] = sig
    return out


REPRESENTATIVES = _representatives()


def _small(name: str):
    config = configs.load(os.path.join(ROOT, "configs", name) + ":runlocal")
    config.model.backbone = "resnet18"
    config.model.stem = "cifar"
    config.model.width = 0.125
    config.model.dtype = "float32"
    config.evals = type(config.evals)()
    return config


def _first_step_forward(config, host_state, devices):
    """`method.loss_fn` of step 0 as `train.make_train_step` calls it, on a mesh of `devices`."""
    mesh = sharding.make_mesh(devices)
    exp = train.build_experiment(config, mesh=mesh)
    method = exp.method
    shardings = state_shardings(host_state, mesh, method.buffer_specs(exp.ctx))
    state = jax.device_put(host_state, shardings)
    batch = sharding.host_to_global(synthetic_batch(config, 0), mesh)

    @jax.jit
    def forward(state, batch):
        inp = train.step_input(exp, state, batch)
        return method.loss_fn(exp.ctx, state.params, state.batch_stats, inp)

    return jax.device_get(forward(state, batch))


def test_every_bn_structure_of_the_configs_is_covered():
    sigs = set(REPRESENTATIVES.values())
    assert {s[3] for s in sigs} == {"all", "backbone"}  # SplitBN on the trunk only, and not
    assert any(s[1] and s[2] and s[4] for s in sigs)  # per-GPU BN with shuffle (MoCo v2, JCL)
    assert any(not s[1] and not s[2] and not s[4] for s in sigs)  # SyncBN (SCE ImageNet)
    assert {"ir", "mocov2", "jcl", "sce"} <= {s[0] for s in sigs}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REPRESENTATIVES))
def test_first_step_agrees_on_one_and_eight_devices(name, request):
    """Skipped for a method whose own test, collected in the same pytest run, carries
    `@pytest.mark.own_device_test(<method>)`."""
    method = runlocal_configs()[name].method
    for item in request.session.items:
        if any(m.args == (method,) for m in item.iter_markers("own_device_test")):
            pytest.skip(f"{method}'s configs: compared on 1 and 8 devices by {item.nodeid}")
    assert jax.device_count() == 8
    config = _small(name)
    exp1 = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    host_state = jax.device_get(train.init_or_restore(exp1, None))
    loss1, out1 = _first_step_forward(config, host_state, jax.devices()[:1])
    loss8, out8 = _first_step_forward(config, host_state, jax.devices())
    np.testing.assert_allclose(loss1, loss8, rtol=2e-5, atol=1e-6)
    for tree in ("batch_stats", "target_batch_stats", "updates", "metrics"):
        a, b = getattr(out1, tree), getattr(out8, tree)
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=2e-4, atol=2e-5)


def test_one_device_shuffle_changes_the_key_bn_statistics():
    """MoCo v2 on ONE device with key groups of 8 images: the shuffled target forward's keys and
    BN running variance differ from the unshuffled one (with groups counted in devices, one
    device meant one group and the shuffle did nothing)."""
    config = _small("mocov2_fashion_mnist.py")
    config.method_config.update(query_bn_group_size=8, key_bn_group_size=8)
    exp = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    assert exp.ctx.hp.shuffle_bn and exp.ctx.num_devices == 1
    state = train.init_or_restore(exp, None)
    target = {"params": state.target_params, "batch_stats": state.target_batch_stats}
    x = jax.random.normal(
        jax.random.PRNGKey(0), (config.global_batch_size, 16, 16, config.data.channels)
    )
    # a batch whose groups differ: the first half is shifted, so contiguous groups of 8 see
    # different statistics unless the shuffle mixes them
    x = x.at[: x.shape[0] // 2].add(2.0)

    def keys(shuffle):
        ctx = dataclasses.replace(exp.ctx, hp=dataclasses.replace(exp.ctx.hp, shuffle_bn=shuffle))
        fn = jax.jit(lambda t, x, r: mocov2.common.target_forward(ctx, t, x, r))
        return fn(target, x, jax.random.PRNGKey(1))

    (out_s, stats_s), (out_n, stats_n) = keys(True), keys(False)
    assert np.max(np.abs(out_s["projection"] - out_n["projection"])) > 1e-2
    var_s = np.asarray(stats_s["backbone"]["bn1"]["var"])
    var_n = np.asarray(stats_n["backbone"]["bn1"]["var"])
    assert np.max(np.abs(var_s - var_n)) > 1e-4
    # groups of the unshuffled forward are the contiguous slices: 4 groups of 8
    assert common.bn_groups(exp.ctx.hp.key_bn_group_size, x.shape[0]) == 4
    assert jnp.isfinite(out_s["projection"]).all()


@pytest.mark.parametrize(
    ("name", "expected"),
    [  # the official runs' BN (the configs' comments cite the files)
        ("mocov2_imagenet.py", dict(query=32, key=32, scope="all", shuffle=True)),
        ("jcl_imagenet.py", dict(query=32, key=128, scope="all", shuffle=True)),
        ("sce_imagenet.py", dict(query=0, key=0, scope="all", shuffle=False)),
        ("sce_cifar10.py", dict(query=0, key=32, scope="backbone", shuffle=True)),
    ],
)
def test_official_bn_settings(name, expected):
    config = configs.load(os.path.join(ROOT, "configs", name))
    hp = common.method_hparams(METHODS[config.method], config)
    got = dict(
        query=hp.query_bn_group_size,
        key=hp.key_bn_group_size,
        scope=hp.bn_group_scope,
        shuffle=hp.shuffle_bn,
    )
    assert got == expected


@pytest.mark.parametrize(("scope", "grouped_bns"), [("all", 20 + 1), ("backbone", 20)])
def test_group_scope_reaches_the_named_layers(scope, grouped_bns):
    """`common.forward` groups every BN (ResNet-18's 20 + the projector's hidden one) or, with
    'backbone' (SplitBN), the trunk's only: counted as [G, N/G, ...] reshapes in the jaxpr."""
    config = _small("sce_cifar10.py")
    config.method_config.bn_group_scope = scope
    exp = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    state = jax.eval_shape(lambda: train.init_or_restore(exp, None))
    b, groups = config.global_batch_size, 8
    x = jax.ShapeDtypeStruct((b, 16, 16, config.data.channels), jnp.float32)
    jaxpr = jax.make_jaxpr(
        lambda p, s, x: common.forward(exp.ctx, p, s, x, bn_group_size=b // groups)
    )(state.params, state.batch_stats, x)
    reshapes = [
        e
        for e in jaxpr.eqns
        if e.primitive.name == "reshape" and e.outvars[0].aval.shape[:2] == (groups, b // groups)
    ]
    assert len(reshapes) == grouped_bns
