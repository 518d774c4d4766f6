"""`models.check_config`: `config.model` checked without building, with the builders' own tables."""

import pytest

from ssl_jax import configs, models
from ssl_jax.config_checks import ConfigError
from ssl_jax.models import conv, resnet


def _config(**overrides):
    cfg = configs.base_config().model.to_dict()
    cfg.update(overrides)
    return cfg


def test_defaults_and_every_allowed_value_pass():
    models.check_config(configs.base_config().model)
    for depth in resnet.STAGES:
        models.check_config(_config(backbone=f"resnet{depth}"))
    for stem in resnet.STEMS:
        models.check_config(_config(stem=stem))
    for impl in conv.CONV_IMPLS:
        models.check_config(_config(conv_impl=impl))
    for dtype in models.DTYPES:
        models.check_config(_config(dtype=dtype))
    models.check_config(_config(predictor=None, width=0.125))
    models.check_config({"backbone": "resnet18", "projector": models.head_config((), 8)})


@pytest.mark.parametrize(
    "overrides, match",
    [
        (
            {"backbone": "resnet101"},
            r"config\.model\.backbone='resnet101' is not allowed; allowed values: "
            r"\['resnet18', 'resnet34', 'resnet50', 'alexnet'\]",
        ),
        ({"backbone": None}, r"config\.model\.backbone=None"),
        ({"stem": "tiny"}, r"config\.model\.stem='tiny' .*\['imagenet', 'cifar', 'stride2'\]"),
        (
            {"dtype": "float16"},
            r"config\.model\.dtype='float16' .*\['float32', 'bfloat16', 'auto'\]",
        ),
        (
            {"conv_impl": "cudnn"},
            r"config\.model\.conv_impl='cudnn' .*\['auto', 'xla', 'matmul', 'dense'\]",
        ),
        ({"width": 0.0}, r"config\.model\.width=0\.0 is not allowed; allowed: a number > 0"),
        ({"width": -1}, r"config\.model\.width=-1"),
        ({"width": "1"}, r"config\.model\.width='1'"),
        ({"zero_init_residual": 1}, r"config\.model\.zero_init_residual=1 .*True or False"),
        ({"projector": None}, r"config\.model\.projector is required"),
        ({"projector": {"hidden_dims": (8,), "out_dim": 0}}, r"model\.projector\.out_dim=0 .*>= 1"),
        ({"projector": {"hidden_dims": (8,), "out_dim": 4.0}}, r"model\.projector\.out_dim=4\.0"),
        (
            {"projector": {"hidden_dims": (8, -2), "out_dim": 4}},
            r"projector\.hidden_dims=\(8, -2\)",
        ),
        ({"projector": {"hidden_dims": 8, "out_dim": 4}}, r"model\.projector\.hidden_dims=8"),
        ({"projector": {"hidden_dims": (8,)}}, r"config\.model\.projector\.out_dim is required"),
        (
            {"projector": {"hidden_dims": (8,), "out_dim": 4, "bias": 1}},
            r"unknown key\(s\) \['bias'\]",
        ),
        ({"projector": {"hidden_dims": (8,), "out_dim": 4, "use_bn": 1}}, r"projector\.use_bn=1"),
        ({"predictor": {"enabled": "yes"}}, r"config\.model\.predictor\.enabled='yes'"),
        ({"predictor": {"enabled": True, "out_dim": 4}}, r"predictor\.hidden_dims is required"),
        (
            {"predictor": {"enabled": True, "hidden_dims": (4,), "out_dim": -1}},
            r"predictor\.out_dim=-1",
        ),
        (
            {"predictor": {"enabled": False, "typo": 1}},
            r"model\.predictor has unknown key\(s\) \['typo'\]",
        ),
        ({"projector_dim": 128}, r"config\.model has unknown key\(s\) \['projector_dim'\]"),
    ],
)
def test_invalid_model_config(overrides, match):
    with pytest.raises(ConfigError, match=match):
        models.check_config(_config(**overrides))


def test_the_builders_reject_what_check_config_rejects():
    # one owner per rule: the allowed values are the builders' tables, so a value check_config
    # accepts builds, and the ResNet module rejects the same stems / conv impls
    for depth in resnet.STAGES:
        models.backbone_only(_config(backbone=f"resnet{depth}"))
    assert {d for d in models.BACKBONES.values()} <= set(resnet.STAGES)
    with pytest.raises(ValueError, match="stem"):
        models.ResNet(depth=18, stem="tiny")
    with pytest.raises(ValueError, match="conv_impl"):
        models.ResNet(depth=18, conv_impl="cudnn")
    models.build_model(configs.base_config().model)
