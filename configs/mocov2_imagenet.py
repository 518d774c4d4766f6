"""MoCo v2 on ImageNet (Chen et al. 2020, "Improved Baselines with Momentum Contrastive Learning").

Official facebookresearch/moco `main_moco.py --mlp --moco-t 0.2 --aug-plus --cos`: ResNet-50, 224 px,
batch 256, SGD lr 0.03, momentum 0.9, wd 1e-4, cosine over 200 epochs, queue 65536 × 128, m 0.999
(updated before the keys), MLP head 2048-2048-128, per-GPU BN (8 GPUs × 32 images: groups of 32 for the
query and the key encoder) with the keys shuffled across GPUs (shuffle-BN).
kNN monitor every 25,000 steps on the first 100,000 training images (ours).
`:runlocal` keeps the ResNet-50 at full width (export and shapes are exercised end to end) but trains a few
steps on 256 Fashion-MNIST images (ImageNet is not on CPU CI) with a 256-entry queue and a 64-unit head.
`ir_imagenet.py` (IR's data, encoder and SGD numbers are these) and the `jcl_imagenet*` configs repeat
these numbers.
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
            queue_size=65536,
            # official DDP: 8 GPUs × 32 images, per-GPU BN (no SyncBN), keys shuffled across GPUs
            query_bn_group_size=32,
            key_bn_group_size=32,
            shuffle_bn=True,
        )
    )
    c.ema.base = 0.999
    c.ema.schedule = "constant"

    common.imagenet_data(c)
    if a.runlocal:  # ImageNet is not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.queue_size = 256
    c.data.views = ("mocov2", "mocov2")
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
