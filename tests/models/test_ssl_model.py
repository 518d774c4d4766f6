"""SSLModel and build_model: outputs, predictor convention, features-only path, validation."""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from model_testutil import random_variables

from ssl_jax.models import (
    MLPHead,
    ResNet,
    SSLModel,
    backbone_only,
    build_model,
    head_config,
    ssl_model,
)


def _config(**overrides):
    cfg = {
        "backbone": "resnet18",
        "stem": "cifar",
        "width": 0.125,
        "dtype": "float32",
        "zero_init_residual": False,
        "projector": head_config((32,), 16),
        "predictor": head_config((24,), 16, enabled=True),
    }
    cfg.update(overrides)
    return ml_collections.ConfigDict(cfg)


def _outputs(model, x_shape=(4, 8, 8, 3), **kwargs):
    x = jax.ShapeDtypeStruct(x_shape, jnp.float32)
    return jax.eval_shape(
        lambda x: model.init_with_output(jax.random.key(0), x, train=True, **kwargs), x
    )


def test_build_model_outputs():
    model = build_model(_config())
    assert isinstance(model.backbone, ResNet) and model.backbone.depth == 18
    assert isinstance(model.predictor, MLPHead)
    out, variables = _outputs(model)
    assert {k: (v.shape, v.dtype) for k, v in out.items()} == {
        "features": ((4, 64), jnp.float32),
        "projection": ((4, 16), jnp.float32),
        "prediction": ((4, 16), jnp.float32),
    }
    assert set(variables["params"]) == {"backbone", "projector", "predictor"}
    assert set(variables["batch_stats"]) == {"backbone", "projector", "predictor"}
    assert "layer4_1" in variables["params"]["backbone"]
    assert variables["params"]["predictor"]["fc0"]["kernel"].shape == (16, 24)


def test_predictor_disabled_and_use_predictor():
    for predictor in (None, head_config((24,), 16, enabled=False)):
        model = build_model(_config(predictor=predictor))
        assert model.predictor is None
        out, variables = _outputs(model)
        assert set(out) == {"features", "projection"}
        assert set(variables["params"]) == {"backbone", "projector"}
    cfg = _config().to_dict()
    del cfg["predictor"]
    assert build_model(cfg).predictor is None
    # a head config without `enabled` is a predictor
    assert build_model(_config(predictor=head_config((24,), 16))).predictor is not None
    out, _ = _outputs(build_model(_config()), use_predictor=False)
    assert set(out) == {"features", "projection"}


def test_features_method_and_bn_groups():
    model = build_model(_config())
    x = np.random.default_rng(0).normal(size=(8, 8, 8, 3)).astype(np.float32)
    variables = random_variables(model, x.shape)

    @jax.jit
    def run(v, x):
        full, _ = model.apply(v, x, train=True, bn_groups=2, mutable=["batch_stats"])
        feats, _ = model.apply(
            v, x, train=True, bn_groups=2, method=SSLModel.features, mutable=["batch_stats"]
        )
        return full["features"], feats

    full, feats = run(variables, x)
    np.testing.assert_allclose(full, feats, rtol=1e-6)

    # bn_groups reaches every BN of backbone, projector and predictor: [G, N/G, ...] reshapes
    def n_group_reshapes(groups):
        jaxpr = jax.make_jaxpr(
            lambda v, x: model.apply(v, x, train=True, bn_groups=groups, mutable=["batch_stats"])
        )(variables, x)
        return sum(
            1
            for eqn in jaxpr.eqns
            if eqn.primitive.name == "reshape"
            and eqn.outvars[0].aval.shape[:2] == (groups, 8 // groups)
        )

    assert n_group_reshapes(2) == 20 + 1 + 1  # ResNet-18 BNs + one hidden BN per head
    # features() defaults to eval mode (no mutable collection needed)
    eval_feats = jax.eval_shape(
        lambda v, x: model.apply(v, x, method=SSLModel.features), variables, x
    )
    assert eval_feats.shape == (8, 64)
    # backbone_only builds the same ResNet; its variables are the 'backbone' subtree
    backbone = backbone_only(_config())
    assert backbone == model.backbone
    direct = jax.eval_shape(
        lambda v, x: backbone.apply(v, x, train=False),
        {k: v["backbone"] for k, v in variables.items()},
        x,
    )
    assert direct.shape == (8, 64)


def test_head_bn_groups_split_the_backbone_only(monkeypatch):
    """SCE's SplitBN (`SplitBatchNorm2D` on the trunk's BatchNorm2d only): with `bn_groups=4,
    head_bn_groups=1` the features are those of 4 separate train-mode forwards of the groups, and
    the projector's BN sees the whole batch (numbers recomputed from separate applies)."""
    # float64 throughout: 2 images per group make BN amplify float32 rounding (one of 512
    # features off by 2.8e-3 on an AVX-512 CPU), which hid nothing but needed a loose atol
    monkeypatch.setitem(ssl_model.DTYPES, "float64", jnp.float64)  # a test-only model dtype
    monkeypatch.setattr(ssl_model, "DTYPE_CHOICES", (*ssl_model.DTYPES, "auto"))
    with jax.enable_x64(True):
        _check_head_bn_groups(build_model(_config(dtype="float64", predictor=None)))


def _check_head_bn_groups(model):
    x = np.random.default_rng(1).normal(size=(8, 8, 8, 3))
    x[:4] += 2.0  # the groups' statistics differ
    variables = random_variables(model, x.shape, dtype=jnp.float64)

    @jax.jit
    def run(v, x):
        split, _ = model.apply(
            v, x, train=True, bn_groups=4, head_bn_groups=1, mutable=["batch_stats"]
        )
        every, _ = model.apply(v, x, train=True, bn_groups=4, mutable=["batch_stats"])
        # reference: each group through the backbone alone, then the projector on all of them
        feats = jnp.concatenate(
            [
                model.apply(v, g, train=True, method=SSLModel.features, mutable=["batch_stats"])[0]
                for g in jnp.split(x, 4)
            ]
        )
        proj, _ = model.projector.apply(
            {"params": v["params"]["projector"], "batch_stats": v["batch_stats"]["projector"]},
            feats,
            True,
            1,
            mutable=["batch_stats"],
        )
        return split, every, feats, proj

    split, every, feats, proj = run(variables, x)
    tol = dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(split["features"], feats, **tol)
    np.testing.assert_allclose(split["projection"], proj, **tol)
    np.testing.assert_allclose(every["features"], feats, **tol)
    assert np.max(np.abs(np.asarray(every["projection"]) - np.asarray(proj))) > 0.1


def test_bfloat16_and_options():
    model = build_model(_config(dtype="bfloat16", zero_init_residual=True, stem="imagenet"))
    assert model.backbone.dtype == jnp.bfloat16 and model.projector.dtype == jnp.bfloat16
    assert model.backbone.zero_init_residual and model.backbone.stem == "imagenet"
    out, variables = _outputs(model, (2, 32, 32, 1))
    assert all(v.dtype == jnp.float32 for v in out.values())
    assert all(a.dtype == jnp.float32 for a in jax.tree.leaves(variables))
    sce = build_model(
        _config(
            projector=head_config((32,), 16, hidden_bias=False, last_bias=False, last_bn=True),
            predictor=None,
        )
    )
    assert sce.projector.last_bn and not sce.projector.hidden_bias


@pytest.mark.parametrize(
    "overrides, match",
    [
        ({"backbone": "resnet101"}, r"model\.backbone must be one of \['resnet18'"),
        ({"stem": "tiny"}, r"model\.stem must be one of \['imagenet', 'cifar', 'stride2'\]"),
        ({"dtype": "float16"}, r"model\.dtype must be one of \['float32', 'bfloat16', 'auto'\]"),
        ({"width": 0.0}, r"model\.width"),
        ({"zero_init_residual": 1}, r"model\.zero_init_residual"),
        ({"projector": None}, r"model\.projector is required"),
        ({"projector": head_config((), 0)}, r"model\.projector\.out_dim"),
        ({"projector": {"hidden_dims": (8,), "out_dim": 4, "bias": True}}, r"'bias'.*allowed"),
        ({"projector": {"hidden_dims": 8, "out_dim": 4}}, r"model\.projector\.hidden_dims"),
        ({"projector": {"hidden_dims": (8,)}}, r"model\.projector\.out_dim is required"),
        ({"predictor": {"enabled": "yes"}}, r"model\.predictor\.enabled"),
        ({"predictor": {"enabled": True, "out_dim": 4}}, r"model\.predictor\.hidden_dims"),
        ({"predictor": {"enabled": False, "typo": 1}}, r"'typo'.*model\.predictor"),
        ({"projector_dim": 128}, r"unknown key\(s\) \['projector_dim'\] in model"),
    ],
)
def test_invalid_config(overrides, match):
    cfg = _config().to_dict()
    cfg.update(overrides)
    with pytest.raises(ValueError, match=match):
        build_model(cfg)
