"""MLPHead: parameter trees of the paper heads, shapes, numerics, init."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ssl_jax.models.heads import MLPHead


def _shapes(head, d_in=16, n=4):
    x = jax.ShapeDtypeStruct((n, d_in), jnp.float32)
    out, variables = jax.eval_shape(
        lambda x: head.init_with_output(jax.random.key(0), x, train=True), x
    )
    return out, jax.tree.map(lambda a: a.shape, variables)


def test_mocov2_head():
    # Linear(2048, 2048) -> ReLU -> Linear(2048, 128), biases, no BN
    out, tree = _shapes(MLPHead(hidden_dims=(32,), out_dim=8, use_bn=False))
    assert out.shape == (4, 8) and out.dtype == jnp.float32
    assert tree == {
        "params": {
            "fc0": {"kernel": (16, 32), "bias": (32,)},
            "fc_out": {"kernel": (32, 8), "bias": (8,)},
        }
    }


def test_sce_imagenet_projector():
    # MoCo v3 style: Linear(no bias) -> BN -> ReLU -> Linear(no bias) -> BN(affine=False)
    head = MLPHead(hidden_dims=(32,), out_dim=8, hidden_bias=False, last_bias=False, last_bn=True)
    out, tree = _shapes(head)
    assert out.shape == (4, 8)
    assert tree == {
        "params": {
            "fc0": {"kernel": (16, 32)},
            "bn0": {"scale": (32,), "bias": (32,)},
            "fc_out": {"kernel": (32, 8)},
        },
        "batch_stats": {
            "bn0": {"mean": (32,), "var": (32,)},
            "bn_out": {"mean": (8,), "var": (8,)},
        },
    }


def test_sce_cifar_projector_and_deeper_heads():
    out, tree = _shapes(MLPHead(hidden_dims=(32,), out_dim=8))
    assert set(tree["params"]) == {"fc0", "bn0", "fc_out"}
    assert tree["params"]["fc0"] == {"kernel": (16, 32), "bias": (32,)}
    assert tree["params"]["fc_out"] == {"kernel": (32, 8), "bias": (8,)}
    out, tree = _shapes(MLPHead(hidden_dims=(32, 24), out_dim=8))
    assert out.shape == (4, 8)
    assert set(tree["params"]) == {"fc0", "bn0", "fc1", "bn1", "fc_out"}
    assert tree["params"]["fc1"]["kernel"] == (32, 24)
    out, tree = _shapes(MLPHead(hidden_dims=(), out_dim=8))  # a single Linear
    assert tree == {"params": {"fc_out": {"kernel": (16, 8), "bias": (8,)}}}


def test_numerics_and_init():
    head = MLPHead(hidden_dims=(64,), out_dim=8, use_bn=False)
    x = np.random.default_rng(0).normal(size=(4, 256)).astype(np.float32)
    variables = jax.jit(lambda x: head.init(jax.random.key(0, impl="rbg"), x, train=False))(x)
    p = jax.device_get(variables["params"])
    # torch nn.Linear init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias
    for name, fan_in in (("fc0", 256), ("fc_out", 64)):
        bound = 1.0 / np.sqrt(fan_in)
        for leaf in (p[name]["kernel"], p[name]["bias"]):
            assert np.abs(leaf).max() <= bound
            assert np.abs(leaf).max() > 0.8 * bound
    y = jax.jit(lambda v, x: head.apply(v, x, train=True))(variables, x)
    h = np.maximum(x @ p["fc0"]["kernel"] + p["fc0"]["bias"], 0.0)
    np.testing.assert_allclose(y, h @ p["fc_out"]["kernel"] + p["fc_out"]["bias"], rtol=1e-5)


@pytest.mark.parametrize("last_bn", [False, True])
def test_bfloat16_head(last_bn):
    head = MLPHead(hidden_dims=(32,), out_dim=8, last_bn=last_bn, dtype=jnp.bfloat16)
    out, variables = jax.eval_shape(
        lambda x: head.init_with_output(jax.random.key(0), x, train=True),
        jax.ShapeDtypeStruct((4, 16), jnp.float32),
    )
    assert out.dtype == jnp.float32
    assert all(a.dtype == jnp.float32 for a in jax.tree.leaves(variables))
