"""BatchNorm: torch semantics, grouped statistics vs numpy, sharded per-device groups, dtypes."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ssl_jax.models.batchnorm import BatchNorm

EPS = 1e-5
MOMENTUM = 0.1


def _variables(c, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return {
        "params": {
            "scale": jnp.asarray(rng.uniform(0.5, 1.5, c), dtype),
            "bias": jnp.asarray(rng.normal(size=c), dtype),
        },
        "batch_stats": {
            "mean": jnp.asarray(rng.normal(size=c), dtype),
            "var": jnp.asarray(rng.uniform(0.5, 2.0, c), dtype),
        },
    }


def _numpy_bn(x, v, groups):
    """Reference: per-group biased stats for the output; running stats from the unbiased ones."""
    x = np.asarray(x, np.float64)
    n, c = x.shape[0], x.shape[-1]
    xg = x.reshape(groups, n // groups, -1, c)
    mean = xg.mean(axis=(1, 2), keepdims=True)
    var = xg.var(axis=(1, 2), keepdims=True)
    count = xg.shape[1] * xg.shape[2]
    y = (xg - mean) / np.sqrt(var + EPS) * np.asarray(v["params"]["scale"]) + np.asarray(
        v["params"]["bias"]
    )
    unbiased = var.reshape(groups, c) * count / (count - 1)
    new_mean = (1 - MOMENTUM) * np.asarray(v["batch_stats"]["mean"]) + MOMENTUM * mean.reshape(
        groups, c
    ).mean(0)
    new_var = (1 - MOMENTUM) * np.asarray(v["batch_stats"]["var"]) + MOMENTUM * unbiased.mean(0)
    return y.reshape(x.shape), new_mean, new_var


def test_train_matches_numpy():
    cases = [((8, 3, 3, 5), 1), ((8, 3, 3, 5), 2), ((8, 3, 3, 5), 4), ((8, 6), 1), ((8, 6), 4)]
    rng = np.random.default_rng(1)
    xs = [rng.normal(2.0, 3.0, size=shape).astype(np.float32) for shape, _ in cases]
    vs = [_variables(shape[-1], seed=i) for i, (shape, _) in enumerate(cases)]

    @jax.jit  # one compile for all cases
    def run(vs, xs):
        return [
            BatchNorm().apply(v, x, train=True, bn_groups=g, mutable=["batch_stats"])
            for v, x, (_, g) in zip(vs, xs, cases)
        ]

    for (y, state), x, v, (_, groups) in zip(run(vs, xs), xs, vs, cases):
        ref_y, ref_mean, ref_var = _numpy_bn(x, v, groups)
        np.testing.assert_allclose(y, ref_y, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(state["batch_stats"]["mean"], ref_mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(state["batch_stats"]["var"], ref_var, rtol=1e-5, atol=1e-6)


def test_running_var_is_unbiased_torch_momentum():
    # from the init (mean 0, var 1): one step gives 0.1 * batch mean, 0.9 + 0.1 * unbiased var
    x = np.arange(4, dtype=np.float32).reshape(4, 1)  # mean 1.5, biased var 1.25, unbiased 5/3
    bn = BatchNorm()
    v = jax.jit(lambda x: bn.init(jax.random.key(0), x, train=False))(x)
    np.testing.assert_array_equal(v["batch_stats"]["mean"], [0.0])
    np.testing.assert_array_equal(v["batch_stats"]["var"], [1.0])
    y, state = jax.jit(lambda v, x: bn.apply(v, x, train=True, mutable=["batch_stats"]))(v, x)
    np.testing.assert_allclose(state["batch_stats"]["mean"], [0.15], rtol=1e-6)
    np.testing.assert_allclose(state["batch_stats"]["var"], [0.9 + 0.1 * 5 / 3], rtol=1e-6)
    np.testing.assert_allclose(y[:, 0], (x[:, 0] - 1.5) / np.sqrt(1.25 + EPS), rtol=1e-6)


def test_init_does_not_update_running_stats():
    x = np.full((4, 2), 3.0, np.float32)
    v = jax.jit(lambda x: BatchNorm().init(jax.random.key(0), x, train=True))(x)
    np.testing.assert_array_equal(v["batch_stats"]["mean"], 0.0)
    np.testing.assert_array_equal(v["batch_stats"]["var"], 1.0)


def test_eval_uses_running_stats():
    x = np.random.default_rng(2).normal(size=(6, 4, 4)).astype(np.float32)
    v = _variables(4)
    y = jax.jit(lambda v, x: BatchNorm().apply(v, x, train=False, bn_groups=4))(v, x)  # ignored
    s = v["batch_stats"]
    ref = (x - np.asarray(s["mean"])) / np.sqrt(np.asarray(s["var"]) + EPS)
    ref = ref * np.asarray(v["params"]["scale"]) + np.asarray(v["params"]["bias"])
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6)


def test_no_affine():
    x = np.random.default_rng(3).normal(size=(8, 5)).astype(np.float32)
    bn = BatchNorm(use_scale=False, use_bias=False)
    v = jax.eval_shape(lambda x: bn.init(jax.random.key(0), x, train=False), x)
    assert "params" not in v
    assert set(v["batch_stats"]) == {"mean", "var"}
    v = {"batch_stats": {"mean": jnp.zeros(5), "var": jnp.ones(5)}}
    y, _ = jax.jit(lambda v, x: bn.apply(v, x, train=True, mutable=["batch_stats"]))(v, x)
    np.testing.assert_allclose(y.mean(0), 0.0, atol=1e-6)
    np.testing.assert_allclose(y.var(0), 1.0, rtol=1e-4)
    only_bias = jax.eval_shape(
        lambda x: BatchNorm(use_scale=False).init(jax.random.key(0), x, train=False), x
    )
    assert set(only_bias["params"]) == {"bias"}


def test_bfloat16_inputs_float32_statistics():
    x = jnp.asarray(np.random.default_rng(4).normal(5.0, 2.0, size=(16, 4, 4, 3)), jnp.bfloat16)
    v = _variables(3)
    y, state = jax.jit(lambda v, x: BatchNorm().apply(v, x, train=True, mutable=["batch_stats"]))(
        v, x
    )
    assert y.dtype == jnp.bfloat16
    assert all(a.dtype == jnp.float32 for a in jax.tree.leaves(state))
    ref_y, ref_mean, ref_var = _numpy_bn(np.asarray(x, np.float32), v, 1)
    np.testing.assert_allclose(state["batch_stats"]["mean"], ref_mean, rtol=1e-5)
    np.testing.assert_allclose(state["batch_stats"]["var"], ref_var, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(y, np.float32), ref_y, rtol=2e-2, atol=2e-2)
    y32 = jax.eval_shape(lambda v, x: BatchNorm(dtype=jnp.float32).apply(v, x, train=False), v, x)
    assert y32.dtype == jnp.float32


def test_invalid_groups():
    x = np.zeros((6, 2), np.float32)
    v = _variables(2)
    with pytest.raises(ValueError, match="bn_groups"):
        jax.eval_shape(
            lambda v, x: BatchNorm().apply(v, x, train=True, bn_groups=4, mutable=["batch_stats"]),
            v,
            x,
        )


def _collectives(compiled_text):
    """(op, result type) of every cross-device collective in an HLO module."""
    pat = r"=\s*(.+?)\s+(all-reduce|all-gather|all-to-all|collective-permute|reduce-scatter)"
    return [(op, res) for res, op in re.findall(pat + r"(?:-start)?\(", compiled_text)]


@pytest.mark.parametrize("groups", [1, 8, 16])
def test_sharded_batch_matches_single_device(groups):
    devices = jax.devices()
    assert len(devices) == 8, "conftest sets 8 host CPU devices"
    mesh = Mesh(np.array(devices), ("data",))
    x = np.random.default_rng(5).normal(1.0, 2.0, size=(32, 4, 4, 3)).astype(np.float32)
    v = _variables(3)
    bn = BatchNorm()

    def step(v, x):
        return bn.apply(v, x, train=True, bn_groups=groups, mutable=["batch_stats"])

    ref_y, ref_mean, ref_var = _numpy_bn(x, v, groups)
    y1, s1 = jax.jit(step)(v, x)  # one device
    xs = jax.device_put(x, NamedSharding(mesh, P("data")))
    vs = jax.device_put(v, NamedSharding(mesh, P()))
    sharded = jax.jit(step)
    y8, s8 = sharded(vs, xs)
    assert y8.sharding.spec == P("data")
    for y, s in ((y1, s1), (y8, s8)):
        np.testing.assert_allclose(y, ref_y, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(s["batch_stats"]["mean"], ref_mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(s["batch_stats"]["var"], ref_var, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y8, y1, rtol=1e-6, atol=1e-6)

    colls = _collectives(sharded.lower(vs, xs).compile().as_text())
    assert all(op == "all-reduce" for op, _ in colls), colls
    if groups == 1:
        assert colls, "SyncBN needs an all-reduce of the statistics"
    else:
        # per-device groups: activations never move; only the [C] running-stat means are reduced
        for _, result in colls:
            for dims in re.findall(r"\[([\d,]*)\]", result):
                assert int(np.prod([int(d) for d in dims.split(",") if d])) <= 3, result
