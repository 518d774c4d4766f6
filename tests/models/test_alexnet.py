"""CMC's AlexNet (`models/alexnet.py`): output shapes and parameter counts of both layouts against
an arithmetic count of HobbitLong/CMC `models/alexnet.py` L31–75, its place in `config.model`."""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from ssl_jax.config_checks import ConfigError
from ssl_jax.models import AlexNet, build_two_encoder_model, check_config, head_config


def _conv_out(size, k, s, p):
    return (size + 2 * p - k) // s + 1


def _reference(in_channels, size, kernels):
    """(parameter count, conv5 map side) of one `alexnet_half` up to fc7, counted by hand: convs
    without bias, BN scale + bias, fc6 / fc7 weights + biases, BN1d scale + bias."""
    widths = [96 // 2, 256 // 2, 384 // 2, 384 // 2, 256 // 2]
    pooled = [True, True, False, False, True]
    count, c_in = 0, in_channels
    for c, (k, s, p), pool in zip(widths, kernels, pooled, strict=True):
        count += k * k * c_in * c + 2 * c
        size = _conv_out(size, k, s, p)
        if pool:
            size = _conv_out(size, 3, 2, 0)
        c_in = c
    fc = 4096 // 2
    flat = c_in * size * size
    count += flat * fc + fc + 2 * fc  # fc6 + bn6
    count += fc * fc + fc + 2 * fc  # fc7 + bn7
    return count, size


CIFAR = [(3, 1, 1)] * 5
IMAGENET = [(11, 4, 2), (5, 1, 2), (3, 1, 1), (3, 1, 1), (3, 1, 1)]


@pytest.mark.parametrize(
    "stem, size, kernels, side",
    [("cifar", 64, CIFAR, 7), ("imagenet", 224, IMAGENET, 6)],  # official: `256 * 6 * 6 // 2`
)
@pytest.mark.parametrize("in_channels", [1, 2])
def test_shapes_and_parameter_count(stem, size, kernels, side, in_channels):
    model = AlexNet(stem=stem, width=0.5)
    x = jax.ShapeDtypeStruct((2, size, size, in_channels), jnp.float32)
    variables = jax.eval_shape(lambda x: model.init(jax.random.PRNGKey(0), x, train=False), x)
    expected, got_side = _reference(in_channels, size, kernels)
    assert got_side == side
    leaves = jax.tree_util.tree_leaves(variables["params"])
    assert sum(int(np.prod(v.shape)) for v in leaves) == expected
    assert variables["params"]["fc6"]["kernel"].shape == (128 * side * side, 2048)
    assert variables["params"]["conv1"]["kernel"].shape[:3] == (kernels[0][0],) * 2 + (in_channels,)
    out = jax.eval_shape(lambda v, x: model.apply(v, x, train=False), variables, x)
    stages = jax.eval_shape(lambda v, x: model.apply(v, x, train=False, stages=True), variables, x)
    assert out.shape == (2, 2048) and out.dtype == jnp.float32 and model.feature_dim == 2048
    assert stages.shape == (2, 128 * side * side + 2 * 2048)


def test_two_encoder_model_is_cmc_alexnet_and_trains_bn():
    """`model.width=1.0` split in two halves (CMC's `alexnet`: L 1 channel, ab 2), fc8 = the head
    (shapes only: `eval_shape`)."""
    cfg = ml_collections.ConfigDict(
        dict(backbone="alexnet", stem="cifar", projector=head_config((), 128, use_bn=False))
    )
    check_config(cfg)
    model = build_two_encoder_model(cfg, width_factor=0.5)
    x = jax.ShapeDtypeStruct((4, 32, 32, 3), jnp.float32)
    variables = jax.eval_shape(lambda x: model.init(jax.random.PRNGKey(0), x, train=False), x)
    assert variables["params"]["encoder1"]["conv1"]["kernel"].shape == (3, 3, 1, 48)
    assert variables["params"]["encoder2"]["conv1"]["kernel"].shape == (3, 3, 2, 48)
    assert variables["params"]["head1"]["fc_out"]["kernel"].shape == (2048, 128)
    train = lambda v, x: model.apply(v, x, train=True, mutable=["batch_stats"])  # noqa: E731
    out, stats = jax.eval_shape(train, variables, x)
    assert out["features"].shape == (4, 4096) and out["projection1"].shape == (4, 128)
    assert set(stats["batch_stats"]["encoder1"]) == {f"bn{i}" for i in range(1, 8)}
    assert model.feature_dim == 4096


@pytest.mark.parametrize(
    "key, value, match",
    [("stem_width", 64, "stem_width"), ("zero_init_residual", True, "zero_init_residual")],
)
def test_resnet_only_options_are_refused(key, value, match):
    cfg = ml_collections.ConfigDict(
        {"backbone": "alexnet", "projector": head_config((), 128), key: value}
    )
    with pytest.raises(ConfigError, match=match):
        check_config(cfg)
    with pytest.raises(ConfigError, match="alexnet"):
        check_config(
            ml_collections.ConfigDict(dict(backbone="alexnett", projector=head_config((), 8)))
        )
