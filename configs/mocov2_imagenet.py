"""MoCo v2 on ImageNet (Chen et al. 2020, "Improved Baselines with Momentum Contrastive Learning").

Official facebookresearch/moco `main_moco.py --mlp --moco-t 0.2 --aug-plus --cos`: ResNet-50, 224 px,
batch 256, SGD lr 0.03, momentum 0.9, wd 1e-4, cosine over 200 epochs, queue 65536 × 128, m 0.999
(updated before the keys), MLP head 2048-2048-128, shuffle-BN across GPUs (one BN group per device).
`:runlocal` keeps the ResNet-50 but trains a few steps on 256 Fashion-MNIST images (ImageNet is not on CPU CI).
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.data import recipes


def get_config(arg=None):
    c = configs.base_config()
    c.method = "mocov2"
    c.method_config = ml_collections.ConfigDict(
        dict(temperature=0.2, queue_size=65536, shuffle_bn=True, key_bn_groups=0)
    )
    c.data.name = "imagenet2012"
    c.data.eval_test_split = "validation"
    c.data.image_size = 224
    c.data.shuffle_buffer = 50_000
    c.model.backbone = "resnet50"
    c.model.stem = "imagenet"
    c.model.projector = ml_collections.ConfigDict(
        dict(
            hidden_dims=(2048,),
            out_dim=128,
            hidden_bias=True,
            last_bias=True,
            last_bn=False,
            use_bn=False,
        )
    )
    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.03
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "cosine"
    c.ema.base = 0.999
    c.ema.schedule = "constant"
    c.knn.every_steps = 25_000
    c.knn.num_train = 100_000
    if configs.is_runlocal(arg):
        configs.use_local_data(c)
        c.method_config.queue_size = 256
    c.data.views = ("mocov2", "mocov2")
    c.data.recipes = ml_collections.ConfigDict({"mocov2": recipes.mocov2(c.data.image_size)})
    configs.finalize(c, arg)
    if configs.is_runlocal(arg):
        c.model.width = 1.0  # keep the real ResNet-50 (export and shapes are exercised end to end)
        c.model.projector.hidden_dims = (64,)
    return c
