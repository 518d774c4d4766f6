"""Supervised baseline on Fashion-MNIST: the encoder trained on the labels (the detection study's ceiling).

The small encoder, data, recipe and SGD of `mocov2_fashion_mnist.py` (ResNet-18, CIFAR stem, width
1/4, batch 256, 3 epochs, SGD lr 0.06 wd 5e-4 cosine, one `fashion_mnist_default` view) with a
linear classifier over the pooled backbone as the projector (`methods/supervised.py`); the grid
`detection_cpu` (`experiments/grids.py`) sets the ImageNet stem and width 1 that Detectron2 builds.
`:runlocal`: 6 steps of 32 images at width 1/8.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = configs.base_config()
    c.method = "supervised"
    c.method_config = ml_collections.ConfigDict(dict(num_classes=10))
    common.small_budget(c, color=False)
    c.data.views = ("fashion",)
    c.data.recipes = ml_collections.ConfigDict({"fashion": recipes.fashion_mnist_default(28)})
    c.model.projector = head_config((), 10, use_bn=False)  # a linear classifier
    if a.runlocal:
        common.runlocal(c)
    return c
