"""JCL on ImageNet as the released code runs it (Cai et al., NeurIPS 2020, "Joint Contrastive
Learning with Infinite Possibilities"; official `scripts/main_pretrain.sh` + `main_moco.py`).

From the code (a fork of facebookresearch/moco, MoCo v2 `--mlp --moco-t 0.2 --aug-plus --cos`):
ResNet-50, 224 px, MLP head 2048-2048-128, batch 256, SGD lr 0.03, momentum 0.9, wd 1e-4, cosine
over 200 epochs, queue 65536 of mean keys, m 0.999 (updated before the keys), shuffle-BN over all
key crops (one BN group per device), `k_crops=5` MoCo v2 crops per image → M' = 4 keys, τ 0.2,
`--jcl_lambda 2.0` ramped per epoch as λ·(epoch+1)/epochs. The paper's Sec. 4.1 numbers (M' = 5, λ
4.0, batch 512, lr 0.06) are `jcl_imagenet_paper.py`. `:runlocal` keeps the ResNet-50 but trains a
few steps on 256 Fashion-MNIST images (ImageNet is not on CPU CI).
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_imagenet.py:keys=8,runlocal`.
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
            num_keys=4,
            lam=2.0,
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
    # one pipeline: view 0 is the query, views 1..M' the keys (MultiCropsTransform(k_crops))
    c.data.views = ("mocov2",) * (c.method_config.num_keys + 1)
    c.data.recipes = ml_collections.ConfigDict({"mocov2": recipes.mocov2(c.data.image_size)})
    configs.finalize(c, arg)
    if configs.is_runlocal(arg):
        c.model.width = 1.0  # keep the real ResNet-50 (as mocov2_imagenet:runlocal)
        c.model.projector.hidden_dims = (64,)
    return c
