"""The Ring/CNCE code's `mocov2_32x32_transforms` (mhw32/contrastive-ring-public @fb3e1c2
`src/datasets/datasets.py` L127–139): RRC(32, 0.2–1), jitter (0.4, 0.4, 0.4, 0.1) p 0.8, grayscale
p 0.2, PIL Gaussian blur σ∈[0.1, 2] p 0.5 (L134), flip; eval Resize 32 / CenterCrop 32."""

import pytest

from configs import ir_stl10, iring_cifar10, mocoring_cifar10
from ssl_jax.data import recipe_ops, recipes


def test_ring_mocov2_32x32_has_the_code_blur():
    ops = recipes.ring_mocov2_32x32()
    assert [op["op"] for op in ops] == [
        "random_resized_crop",
        "color_jitter",
        "grayscale",
        "gaussian_blur",
        "horizontal_flip",
    ]  # the code's order
    blur = ops[3]
    assert blur["p"] == 0.5
    assert blur["sigma"] == (0.1, 2.0)  # GaussianBlur([.1, 2.]): PIL radius σ ~ U(0.1, 2)
    assert blur["kernel_size"] == recipes.PIL_BLUR_TAPS == 13  # ±3σ at σ = 2
    assert ops[0] == {"op": "random_resized_crop", "size": 32, "scale": (0.2, 1.0)}
    jitter = {k: ops[1][k] for k in ("p", "brightness", "contrast", "saturation", "hue")}
    assert jitter == dict(p=0.8, brightness=0.4, contrast=0.4, saturation=0.4, hue=0.1)
    assert ops[2]["p"] == 0.2
    recipe_ops.validate_recipe("ring", ops, channels=3)


@pytest.mark.parametrize("module", [ir_stl10, iring_cifar10, mocoring_cifar10])
def test_mocov2_32x32_arg_uses_it(module):
    config = module.get_config("mocov2_32x32")
    for view in config.data.views:
        assert tuple(config.data.recipes[view]) == recipes.ring_mocov2_32x32(32)
    assert config.data.image_size == 32
    assert config.data.eval_crop_fraction == 1.0
    default = module.get_config()
    assert tuple(default.data.recipes[default.data.views[0]]) == (
        recipes.instance_discrimination(224)
    )
