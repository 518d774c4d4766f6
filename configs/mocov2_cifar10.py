"""MoCo v2 on CIFAR-10: ResNet-18 with the CIFAR stem (3×3 conv, no max-pool), 32 px.

Follows the official ImageNet recipe (τ 0.2, m 0.999, MLP head, SGD lr 0.03 wd 1e-4... scaled to CIFAR as the
MoCo CIFAR demo and the Ring code's MoCo baseline: queue 4096, 200 epochs, batch 256, cosine); shuffle-BN
with 8 BN groups so one device behaves as 8 GPUs. The MoCo v2 augmentation at 32 px (blur off at 32 px as the
MoCo CIFAR demo). `:runlocal` trains a few steps on Fashion-MNIST (CIFAR is not on CPU CI).
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.data import recipes


def get_config(arg=None):
    c = configs.base_config()
    c.method = "mocov2"
    c.method_config = ml_collections.ConfigDict(
        dict(temperature=0.2, queue_size=4096, shuffle_bn=True, key_bn_groups=8)
    )
    c.data.name = "cifar10"
    c.data.eval_test_split = "test"
    c.data.image_size = 32
    c.data.eval_crop_fraction = 1.0
    c.data.mean, c.data.std = configs.CIFAR10_MEAN, configs.CIFAR10_STD
    c.data.cache = True
    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.projector = ml_collections.ConfigDict(
        dict(
            hidden_dims=(512,),
            out_dim=128,
            hidden_bias=True,
            last_bias=True,
            last_bn=False,
            use_bn=False,
        )
    )
    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.base_lr = 0.03
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "cosine"
    c.ema.base = 0.999
    c.knn.every_steps = 2000
    if configs.is_runlocal(arg):
        configs.use_local_data(c)
        c.method_config.queue_size = 256
    c.data.views = ("mocov2", "mocov2")
    c.data.recipes = ml_collections.ConfigDict(
        {"mocov2": recipes.mocov2(c.data.image_size, blur=False)}
    )
    return configs.finalize(c, arg)
