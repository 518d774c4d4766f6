"""ResNet structure: output shapes, widths, channel counts, names, dtypes, init."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from model_testutil import abstract_variables, max_rel_err, random_variables

from ssl_jax.models import resnet
from ssl_jax.models.resnet import ResNet, feature_dim

FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def _init_shapes(model, x_shape, capture=()):
    """(output, variables, captured block outputs) of a train-mode init, as ShapeDtypeStructs."""

    def run(x):
        out, state = model.init_with_output(
            jax.random.key(0),
            x,
            train=True,
            capture_intermediates=lambda mdl, _: mdl.name in capture,
        )
        inter = {k: v["__call__"][0] for k, v in state.pop("intermediates", {}).items()}
        return out, state, inter

    return jax.eval_shape(run, jax.ShapeDtypeStruct(x_shape, jnp.float32))


@pytest.mark.parametrize(
    "depth, stem, width, size, channels, expected, layer1, layer4",
    [
        # torch: out = floor((in + 2p - k) / s) + 1; 33: conv7/2 p3 -> 17, pool3/2 p1 -> 9, 5, 3, 2
        (34, "imagenet", 1.0, 33, 3, 512, 9, 2),
        (50, "imagenet", 1.0, 64, 3, 2048, 16, 2),
        (18, "imagenet", 0.25, 224, 5, 128, 56, 7),
        (18, "cifar", 1.0, 32, 3, 512, 32, 4),
        (50, "cifar", 0.5, 32, 1, 1024, 32, 4),
        (34, "cifar", 2.0, 28, 1, 1024, 28, 4),
    ],
)
def test_output_shapes(depth, stem, width, size, channels, expected, layer1, layer4):
    model = ResNet(depth=depth, stem=stem, width=width)
    assert feature_dim(depth, width) == expected == model.feature_dim
    last = {18: "layer4_1", 34: "layer4_2", 50: "layer4_2"}[depth]
    out, variables, inter = _init_shapes(model, (3, size, size, channels), ("layer1_0", last))
    assert out.shape == (3, expected) and out.dtype == jnp.float32
    assert inter["layer1_0"].shape[1:3] == (layer1, layer1)
    assert inter[last].shape[1:] == (layer4, layer4, expected)
    base = int(round(64 * width))
    k = 7 if stem == "imagenet" else 3
    assert variables["params"]["conv1"]["kernel"].shape == (k, k, channels, base)


def test_module_names_mirror_torchvision():
    params = abstract_variables(ResNet(depth=50), (1, 32, 32, 3))["params"]
    expected = {"conv1", "bn1"} | {
        f"layer{i + 1}_{j}" for i, n in enumerate((3, 4, 6, 3)) for j in range(n)
    }
    assert set(params) == expected
    assert set(params["layer1_0"]) == {
        "conv1",
        "bn1",
        "conv2",
        "bn2",
        "conv3",
        "bn3",
        "downsample_conv",
        "downsample_bn",
    }
    assert set(params["layer1_1"]) == {"conv1", "bn1", "conv2", "bn2", "conv3", "bn3"}
    # stride on the 3x3 conv (v1.5): visible in the kernel shapes, checked numerically vs torch.
    assert params["layer2_0"]["conv2"]["kernel"].shape == (3, 3, 128, 128)
    assert set(params["layer2_0"]["bn1"]) == {"scale", "bias"}
    assert "bias" not in params["layer2_0"]["conv1"]

    params18 = abstract_variables(ResNet(depth=18), (1, 32, 32, 3))["params"]
    assert "downsample_conv" not in params18["layer1_0"]
    assert set(params18["layer2_0"]) == {
        "conv1",
        "bn1",
        "conv2",
        "bn2",
        "downsample_conv",
        "downsample_bn",
    }


def test_bfloat16_dtypes():
    model = ResNet(depth=18, stem="cifar", width=0.25, dtype=jnp.bfloat16)
    variables = abstract_variables(model, (2, 16, 16, 3))
    assert all(a.dtype == jnp.float32 for a in jax.tree.leaves(variables))

    def run(v, x):
        out, state = model.apply(
            v,
            x,
            train=True,
            capture_intermediates=lambda mdl, _: mdl.name == "layer1_0",
            mutable=["batch_stats", "intermediates"],
        )
        return out, state["batch_stats"], state["intermediates"]["layer1_0"]["__call__"][0]

    out, stats, inter = jax.eval_shape(
        run, variables, jax.ShapeDtypeStruct((2, 16, 16, 3), jnp.float32)
    )
    assert out.dtype == jnp.float32
    assert inter.dtype == jnp.bfloat16
    assert all(a.dtype == jnp.float32 for a in jax.tree.leaves(stats))


def test_bfloat16_close_to_float32():
    x = jnp.asarray(np.random.default_rng(0).normal(size=(4, 8, 8, 3)), jnp.float32)
    f32 = ResNet(depth=18, stem="cifar", width=0.125)
    bf16 = ResNet(depth=18, stem="cifar", width=0.125, dtype=jnp.bfloat16)
    variables = random_variables(f32, x.shape)

    @functools.partial(jax.jit, compiler_options=FAST_COMPILE)
    def run(v, x):
        # eval mode: train-mode BN over 4 values per channel (layer4 is 1x1) is ill-conditioned
        return f32.apply(v, x, train=False), bf16.apply(v, x, train=False)

    a, b = run(variables, x)
    assert b.dtype == jnp.float32
    assert max_rel_err(b, a) < 5e-2


def test_block_init():
    x = jnp.zeros((2, 8, 8, 64))
    basic = resnet._Block(kind="basic", planes=32, strides=2, downsample=True)
    bottleneck = resnet._Block(
        kind="bottleneck", planes=32, strides=2, downsample=True, zero_init_last_bn=True
    )

    # 'rbg' keys: threefry draws take seconds to compile on CPU; the distributions are the same.
    @jax.jit
    def init(key):
        k1, k2 = jax.random.split(key)
        return basic.init(k1, x, train=False), bottleneck.init(k2, x, train=False)

    for variables, last, zero in zip(
        init(jax.random.key(0, impl="rbg")), ("bn2", "bn3"), (False, True)
    ):
        params = variables["params"]
        np.testing.assert_array_equal(params[last]["scale"], 0.0 if zero else 1.0)
        np.testing.assert_array_equal(params["bn1"]["scale"], 1.0)
        np.testing.assert_array_equal(params["downsample_bn"]["scale"], 1.0)
        np.testing.assert_array_equal(params[last]["bias"], 0.0)
        stats = variables["batch_stats"]["bn1"]
        np.testing.assert_array_equal(stats["mean"], 0.0)
        np.testing.assert_array_equal(stats["var"], 1.0)
        # kaiming_normal_(mode='fan_out', nonlinearity='relu'): std = sqrt(2 / (k * k * out))
        kernel = np.asarray(params["conv2"]["kernel"])
        std = np.sqrt(2.0 / (9 * kernel.shape[-1]))
        assert abs(kernel.std() / std - 1.0) < 0.1
        assert np.abs(kernel).max() > 2.5 * std  # untruncated normal


def test_invalid_attributes():
    with pytest.raises(ValueError, match="depth"):
        ResNet(depth=101)
    with pytest.raises(ValueError, match="stem"):
        ResNet(depth=18, stem="tiny")
    with pytest.raises(ValueError, match="depth"):
        feature_dim(152)
