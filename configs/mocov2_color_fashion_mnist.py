"""MoCo v2 on color_fashion_mnist at 32 px, on RGB: the baseline of the CMC (L | ab, Y | CbCr) runs.

Not an official configuration. MoCo v2's method as `mocov2_cifar10.py` (τ 0.2, EMA before the keys,
MLP head 512-128, InfoNCE against a queue, key BN in 8 shuffled groups of 32) with the MoCo v2
augmentation at 32 px without the blur (RRC (0.2, 1), jitter 0.4/0.4/0.4/0.1 p 0.8, grayscale p 0.2,
flip), and the data, encoder, batch and SGD of `cmc_color_fashion_mnist.py` (ResNet-18 CIFAR stem at
width 1/2 — CMC splits that width into two encoders of 1/4 —, batch 256, 3 epochs, lr 0.06, wd 5e-4,
cosine; ours), queue 4096, EMA 0.99 (ours, for 3 epochs). `:runlocal`: a few steps of 32 images.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = configs.base_config()
    c.method = "mocov2"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=4096,
            # one accelerator: the online network on the whole batch, the keys in 8 shuffled BN
            # groups (as MoCo's shuffle-BN over 8 GPUs)
            query_bn_group_size=0,
            key_bn_group_size=32,
            shuffle_bn=True,
        )
    )
    c.ema.base = 0.99

    common.color_fashion_mnist_budget(c)
    c.data.views = ("mocov2", "mocov2")
    c.data.recipes = ml_collections.ConfigDict(
        {"mocov2": recipes.mocov2(c.data.image_size, blur=False)}
    )

    c.model.projector = head_config((512,), 128, use_bn=False)  # MLP 512-512-128

    if a.runlocal:
        c.method_config.queue_size = 256
        common.runlocal(c)
    return c
