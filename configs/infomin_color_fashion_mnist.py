"""InfoMin on color_fashion_mnist at 32 px: the evidence runs (InfoMin vs MoCo v2, with and
without the jigsaw branch).

Not an official configuration. InfoMin's method as `infomin_imagenet.py` (τ 0.15, MLP head, EMA
after the optimiser step, queue, jigsaw weight 0.5, keys in 8 shuffled BN groups of 32) with aug
"D" at 32 px (`recipes.infomin(32)`: its 23-tap blur and RandAugment at full strength, as
PyContrast at any size) and the jigsaw mosaic scaled from 255/85/64 px to 36/12/9 px (a 27-px mosaic
of nine 9-px patches). Data, encoder, batch and SGD as `mocov2_color_fashion_mnist.py`, its
baseline: ResNet-18 CIFAR stem at width 1/2, MLP 512-128, batch 256, 3 epochs, lr 0.06, wd 5e-4,
cosine, queue 4096, EMA 0.99 (ours, for 3 epochs). `get_config('jigsaw=False')`: InfoMin without
the jigsaw branch. `:runlocal`: a few steps of 32 images.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg, jigsaw=True)
    c = configs.base_config()
    c.method = "infomin"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.15,
            queue_size=4096,
            jigsaw=True,
            jigsaw_weight=0.5,
            # one accelerator: the online network on the whole batch, the keys in 8 shuffled BN
            # groups (as MoCo's shuffle-BN over 8 GPUs)
            query_bn_group_size=0,
            key_bn_group_size=32,
            shuffle_bn=True,
        )
    )
    c.ema.base = 0.99
    c.ema.schedule = "constant"

    common.small_budget(c, color=True)
    common.infomin_views(c, jigsaw=a.jigsaw)

    c.model.projector = head_config((512,), 128, use_bn=False)  # MLP 512-512-128

    if a.runlocal:
        c.method_config.queue_size = 256
        common.runlocal(c)
    return c
