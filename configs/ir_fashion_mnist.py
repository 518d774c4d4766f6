"""IR (memory-bank instance discrimination) on Fashion-MNIST: a small CPU run.

IR's loss and bank (τ 0.07, K 4096 uniform negatives, bank momentum 0.5; `ir_imagenet.py`'s values)
with the small encoder, data, recipe and SGD of `mocov2_fashion_mnist.py` (ResNet-18, CIFAR stem,
width 1/4, MLP 256-128, batch 256, 3 epochs, SGD lr 0.06 wd 5e-4 cosine) and its final probe table;
the bank holds all 60,000 training images. `:runlocal`: 6 steps of 32 images at width 1/8, a bank of
256 and 64 negatives.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = configs.base_config()
    c.method = "ir"
    c.method_config = ml_collections.ConfigDict(
        dict(temperature=0.07, num_negatives=4096, bank_size=60_000, bank_momentum=0.5)
    )

    common.small_budget(c, color=False)
    c.data.views = ("fashion",)
    c.data.recipes = ml_collections.ConfigDict({"fashion": recipes.fashion_mnist_default(28)})
    c.model.projector = head_config((256,), 128, use_bn=False)  # MLP 256-128
    if a.runlocal:
        c.method_config.update(bank_size=256, num_negatives=64)
        common.runlocal(c)
    return c
