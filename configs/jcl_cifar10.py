"""JCL on CIFAR-10: ResNet-18 with the CIFAR stem (3×3 conv, no max-pool), 32 px.

The JCL code and paper have no small-dataset setting. JCL's own numbers are the released code's (M'
= 4, λ 2.0 ramped per epoch as λ·(epoch+1)/epochs, τ 0.2, m 0.999, mean keys in the queue);
everything else is `mocov2_cifar10.py` so that the two compare at the same budget: queue 4096, batch
256, SGD lr 0.03, wd 1e-4, cosine over 200 epochs, MLP head 512-512-128, MoCo v2 augmentation at 32
px without blur, shuffle-BN with 8 BN groups over the 4 × 256 key crops (128 per group, as each GPU
of the official 8-GPU run sees). `:runlocal` trains a few steps on Fashion-MNIST (CIFAR is not on
CPU CI).
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_cifar10.py:keys=8,runlocal`.
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.methods import jcl


def get_config(arg=None):
    keys, arg = jcl.split_config_arg(arg)  # `:keys=N` sets M' (and so the views)
    c = configs.base_config()
    c.method = "jcl"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=4096,
            num_keys=4,
            lam=2.0,
            lam_schedule="linear_epoch",
            shuffle_bn=True,
            key_bn_groups=8,
        )
    )
    if keys:
        c.method_config.num_keys = keys
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
    c.data.views = ("mocov2",) * (c.method_config.num_keys + 1)
    c.data.recipes = ml_collections.ConfigDict(
        {"mocov2": recipes.mocov2(c.data.image_size, blur=False)}
    )
    return configs.finalize(c, arg)
