"""`configs.load` / `configs.apply_override`: what scripts and notebooks use instead of the flags."""

import pytest

from ssl_jax import configs


def test_load_applies_the_config_argument():
    full = configs.load("configs/scce_fashion_mnist.py")
    local = configs.load("configs/scce_fashion_mnist.py:runlocal")
    assert full.method == local.method == "sce"
    assert local.total_steps < full.total_steps


def test_load_missing_file_is_a_config_error():
    with pytest.raises(configs.ConfigError, match="does not exist"):
        configs.load("configs/no_such_config.py")


def test_apply_override_parses_and_casts_like_the_flags():
    c = configs.load("configs/scce_fashion_mnist.py")
    configs.apply_override(c, "optim.base_lr=1")  # int for a float field becomes a float
    configs.apply_override(c, "model.stem=imagenet")  # not a literal: kept as a string
    configs.apply_override(c, "total_steps=123")
    configs.apply_override(c, "data.views=['weak', 'weak']")  # list for a tuple field
    assert c.optim.base_lr == 1.0 and isinstance(c.optim.base_lr, float)
    assert c.model.stem == "imagenet"
    assert c.total_steps == 123
    assert c.data.views == ("weak", "weak")


@pytest.mark.parametrize(
    "assignment, message",
    [
        ("optim.base_lrr=1.0", "base_lrr"),
        ("optimm.base_lr=1.0", "optimm"),
        ("total_steps=many", "total_steps='many'"),
        ("total_steps", "key=value"),
    ],
)
def test_apply_override_rejects_bad_input(assignment, message):
    c = configs.load("configs/scce_fashion_mnist.py")
    with pytest.raises(configs.ConfigError, match=message):
        configs.apply_override(c, assignment)
