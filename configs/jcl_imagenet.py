"""JCL on ImageNet as the released code runs it (Cai et al., NeurIPS 2020, "Joint Contrastive
Learning with Infinite Possibilities"; official `scripts/main_pretrain.sh` + `main_moco.py`).

From the code (a fork of facebookresearch/moco, MoCo v2 `--mlp --moco-t 0.2 --aug-plus --cos`):
ResNet-50, 224 px, MLP head 2048-2048-128, batch 256, SGD lr 0.03, momentum 0.9, wd 1e-4, cosine
over 200 epochs, queue 65536 of mean keys, m 0.999 (updated before the keys), shuffle-BN over all
key crops (one BN group per device), `k_crops=5` MoCo v2 crops per image → M' = 4 keys, τ 0.2,
`--jcl_lambda 2.0` ramped per epoch as λ·(epoch+1)/epochs. The paper's Sec. 4.1 numbers (M' = 5, λ
4.0, batch 512, lr 0.06) are `jcl_imagenet_paper.py`. Everything but the method is
`mocov2_imagenet.py`'s numbers (JCL = MoCo v2 + M' key crops + the λ term), including the kNN
monitor (every 25,000 steps, 100,000 training images). `:runlocal` keeps the ResNet-50 but trains a
few steps on 256 Fashion-MNIST images (ImageNet is not on CPU CI) with a 256-entry queue.
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_imagenet.py:keys=8,runlocal`.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg, keys=4)  # M' = 4: the released script's `k_crops=5`
    c = configs.base_config()
    c.method = "jcl"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=65536,
            # official DDP (8 GPUs × 32 queries, no SyncBN): per-GPU BN of 32 queries and, after
            # the shuffle of all M'·256 key crops, of M'·32 keys
            shuffle_bn=True,
            query_bn_group_size=32,
            key_bn_group_size=32 * a.keys,
            num_keys=a.keys,
            lam=2.0,
            lam_schedule="linear_epoch",
        )
    )
    c.ema.base = 0.999
    c.ema.schedule = "constant"

    common.imagenet_data(c)
    if a.runlocal:  # ImageNet is not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.queue_size = 256
    c.data.views = common.jcl_views("mocov2", a.keys)
    c.data.recipes = ml_collections.ConfigDict({"mocov2": recipes.mocov2(c.data.image_size)})
    common.colour_ops_on_device(c)  # the host cannot feed an accelerator otherwise

    c.model.backbone = "resnet50"
    c.model.dtype = "auto"  # bfloat16 compute on GPU/TPU, float32 on CPU
    c.model.stem = "imagenet"
    c.model.projector = head_config((2048,), 128, use_bn=False)  # MLP 2048-2048-128

    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.03
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "cosine"
    c.optim.schedule_unit = "epoch"  # official adjust_learning_rate: cosine once per epoch
    c.evals.knn.update(every_steps=25_000, num_train=100_000)
    if a.runlocal:
        common.runlocal(c)
        c.model.width = 1.0  # the real ResNet-50
        c.model.projector.hidden_dims = (64,)
    return c
