"""MoCo v2 on CIFAR-10: ResNet-18 with the CIFAR stem (3×3 conv, no max-pool), 32 px.

Follows the official ImageNet recipe (τ 0.2, m 0.999, MLP head, SGD lr 0.03 wd 1e-4... scaled to CIFAR as the
MoCo CIFAR demo and the Ring code's MoCo baseline: queue 4096, 200 epochs, batch 256, cosine); shuffle-BN
with 8 BN groups so one device behaves as 8 GPUs. The MoCo v2 augmentation at 32 px (blur off at 32 px as the
MoCo CIFAR demo). `:runlocal` trains a few steps on Fashion-MNIST (CIFAR is not on CPU CI).
`ir_cifar10.py` shares `setting` (the Ring code's IR baseline has these numbers), `jcl_cifar10.py`
builds on `build`.
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def setting(c):
    """What `ir_cifar10.py` shares: the data, the encoder and head, batch, epochs, SGD lr and wd,
    the kNN monitor (not the method, its views and recipe, the lr schedule or m)."""
    configs.use_cifar10(c)
    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.projector = head_config((512,), 128, use_bn=False)  # MLP 512-512-128
    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.base_lr = 0.03
    c.optim.weight_decay = 1e-4
    c.knn.every_steps = 2000


def build(arg=None, edit=None):
    """The MoCo v2 config; `edit(config)` (`jcl_cifar10.py`: the method, the key views, its own
    numbers) runs before `:runlocal`, and the recipe follows `config.data.image_size`."""
    c = configs.base_config()
    c.method = "mocov2"
    c.method_config = ml_collections.ConfigDict(
        dict(temperature=0.2, queue_size=4096, shuffle_bn=True, key_bn_groups=8)
    )
    setting(c)
    c.optim.schedule = "cosine"
    c.ema.base = 0.999
    c.data.views = ("mocov2", "mocov2")
    if edit is not None:
        edit(c)
    if configs.is_runlocal(arg):
        configs.use_local_data(c)
        c.method_config.queue_size = 256
    c.data.recipes = ml_collections.ConfigDict(
        {"mocov2": recipes.mocov2(c.data.image_size, blur=False)}
    )
    return configs.finalize(c, arg)


def get_config(arg=None):
    return build(arg)
