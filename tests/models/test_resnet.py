"""ResNet structure: output shapes, widths, channel counts, names, dtypes, init."""

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from model_testutil import abstract_variables, max_rel_err, random_variables

from ssl_jax.models import resnet
from ssl_jax.models.batchnorm import BatchNorm
from ssl_jax.models.resnet import ResNet, feature_dim


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
        # stride2: conv3/2 p1, no pool: 28 -> 14, 7, 4, 2
        (18, "stride2", 0.5, 28, 1, 256, 14, 2),
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
    # one bottleneck block (the compute path of every block); the whole-net dtype flow is above
    x = jnp.asarray(np.random.default_rng(0).normal(size=(4, 8, 8, 32)), jnp.float32)
    f32 = resnet._Block(kind="bottleneck", planes=16, strides=2, downsample=True)
    bf16 = resnet._Block(
        kind="bottleneck", planes=16, strides=2, downsample=True, dtype=jnp.bfloat16
    )
    variables = random_variables(f32, x.shape)

    @jax.jit
    def run(v, x):
        a = f32.apply(v, x, train=True, mutable=["batch_stats"])
        b = bf16.apply(v, x, train=True, mutable=["batch_stats"])
        return a, b

    (a, a_stats), (b, b_stats) = run(variables, x)
    assert b.dtype == jnp.bfloat16
    assert max_rel_err(b, a) < 2e-2
    assert all(s.dtype == jnp.float32 for s in jax.tree.leaves(b_stats))
    jax.tree.map(
        lambda u, v: np.testing.assert_allclose(u, v, rtol=2e-2, atol=1e-3), b_stats, a_stats
    )


def _init_wiring(model, x_shape):
    """{module path: (module type, kernel/scale initialiser)} seen while tracing `model.init`."""
    seen = {}

    def interceptor(next_fun, args, kwargs, context):
        mdl = context.module
        if context.method_name == "__call__" and isinstance(mdl, nn.Conv | BatchNorm):
            init = mdl.kernel_init if isinstance(mdl, nn.Conv) else mdl.scale_init
            seen["/".join(mdl.path)] = (type(mdl).__name__, init)
        return next_fun(*args, **kwargs)

    with nn.intercept_methods(interceptor):
        abstract_variables(model, x_shape)
    return seen


@pytest.mark.parametrize("depth, zero", [(18, False), (50, True)])
def test_init_wiring(depth, zero):
    # traced, not run: compiling a ResNet init (threefry draws) costs ~10 s on CPU
    seen = _init_wiring(ResNet(depth=depth, width=0.25, zero_init_residual=zero), (1, 32, 32, 3))
    last = "bn2" if depth == 18 else "bn3"
    n_bn = 0
    for path, (kind, init) in seen.items():
        if kind == "Conv":
            assert init is resnet.conv_init, path
        else:
            n_bn += 1
            is_last = path.endswith("/" + last)
            expected = nn.initializers.zeros if (zero and is_last) else nn.initializers.ones
            assert init is expected, path
    assert n_bn == (20 if depth == 18 else 53)


def test_conv_init_is_kaiming_normal_fan_out():
    # torch kaiming_normal_(mode='fan_out', nonlinearity='relu'): N(0, 2 / (k*k*out)), untruncated
    kernel = np.asarray(resnet.conv_init(jax.random.key(0), (3, 3, 64, 128), jnp.float32))
    std = np.sqrt(2.0 / (9 * 128))
    assert abs(kernel.std() / std - 1.0) < 0.02
    assert abs(kernel.mean()) < 0.02 * std
    assert np.abs(kernel).max() > 3.5 * std  # not truncated at 2 sigma


def test_invalid_attributes():
    with pytest.raises(ValueError, match="depth"):
        ResNet(depth=101)
    with pytest.raises(ValueError, match="stem"):
        ResNet(depth=18, stem="tiny")
    with pytest.raises(ValueError, match="depth"):
        feature_dim(152)


def test_stem_width_keeps_a_wide_stem_at_any_width():
    """CMC's `resnet50v1`: a 64-channel stem in front of stages of width 0.5 (layer1 widens 64 → 32·4
    through its downsample); features as the width says."""
    model = ResNet(depth=50, width=0.5, stem_width=64)
    v = abstract_variables(model, (1, 32, 32, 2))
    p = v["params"]
    assert p["conv1"]["kernel"].shape == (7, 7, 2, 64)
    assert p["layer1_0"]["conv1"]["kernel"].shape == (1, 1, 64, 32)
    assert p["layer1_0"]["downsample_conv"]["kernel"].shape == (1, 1, 64, 128)
    assert model.feature_dim == 1024
    default = abstract_variables(ResNet(depth=50, width=0.5), (1, 32, 32, 2))["params"]
    assert default["conv1"]["kernel"].shape == (7, 7, 2, 32)


def test_stage_features_are_every_stages_pooled_output():
    """`stages=True`: the global averages of the four stages' outputs, concatenated, the last of
    them the usual pooled output."""
    model = ResNet(depth=18, stem="imagenet", width=0.25)
    x = jax.random.normal(jax.random.key(1), (2, 28, 28, 1))
    variables = model.init(jax.random.key(0), x, train=False)
    blocks = ("layer1_1", "layer2_1", "layer3_1", "layer4_1")
    stages, state = model.apply(
        variables,
        x,
        train=False,
        stages=True,
        capture_intermediates=lambda mdl, _: mdl.name in blocks,
    )
    pooled = model.apply(variables, x, train=False)
    assert stages.shape == (2, 16 + 32 + 64 + 128) and stages.dtype == jnp.float32
    expected = [state["intermediates"][b]["__call__"][0].mean(axis=(1, 2)) for b in blocks]
    np.testing.assert_allclose(stages, np.concatenate(expected, -1), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(stages[:, -128:], pooled)
