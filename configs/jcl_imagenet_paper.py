"""JCL on ImageNet with the paper's numbers (Cai et al., NeurIPS 2020, Sec. 4.1, supplementary C).

From the paper: ResNet-50 with a two-layer MLP head (d = 128), M' = 5 positive keys, τ 0.2, λ 4.0,
batch N = 512, lr 0.06 with cosine decay, 200 epochs, SGD momentum 0.9, wd 1e-4, queue 65536 of mean
keys, m 0.999, shuffle-BN over the N × M' concatenated keys, MoCo v2 augmentation ("other settings
strictly follow MoCo v2"). The paper states no λ schedule; it motivates λ by the statistics being
"less informative in the beginning of the training", and the only released code ramps it per epoch,
so the ramp λ·(epoch+1)/epochs is kept here too (`--config.method_config.lam_schedule=constant` for
a fixed λ). The released script's numbers (M' = 4, λ 2.0, batch 256, lr 0.03) are `jcl_imagenet.py`.
`:runlocal` keeps the ResNet-50 but trains a few steps on 256 Fashion-MNIST images.
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_imagenet_paper.py:keys=8,runlocal`.
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
            queue_size=65536,
            num_keys=5,
            lam=4.0,
            lam_schedule="linear_epoch",
            shuffle_bn=True,
            key_bn_groups=0,
        )
    )
    if keys:
        c.method_config.num_keys = keys
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
    c.global_batch_size = 512
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.06
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "cosine"
    c.ema.base = 0.999
    c.ema.schedule = "constant"
    c.knn.every_steps = 12_500
    c.knn.num_train = 100_000
    if configs.is_runlocal(arg):
        configs.use_local_data(c)
        c.method_config.queue_size = 256
    c.data.views = ("mocov2",) * (c.method_config.num_keys + 1)
    c.data.recipes = ml_collections.ConfigDict({"mocov2": recipes.mocov2(c.data.image_size)})
    configs.finalize(c, arg)
    if configs.is_runlocal(arg):
        c.model.width = 1.0  # keep the real ResNet-50
        c.model.projector.hidden_dims = (64,)
    return c
