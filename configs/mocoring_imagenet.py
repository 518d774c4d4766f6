"""MoCoRing (CNCE with a MoCo queue; Wu et al., ICLR 2021) on ImageNet: `mocov2_imagenet.py` with the
queue restricted to a ring.

The Ring code has no ImageNet config: every number is `mocov2_imagenet.py`'s (ResNet-50, MLP
2048-2048-128, queue 65,536, τ 0.2, m 0.999, per-GPU BN with shuffle-BN, SGD 0.03 cosine, 200
epochs), plus the code's ring (outer 0.1, inner 0.1: all 5,898 queue entries at descending positions
655 … 6,552). Not annealed by default (the released code's policy); `:anneal=linear` is the paper's
(outer 1.0 → 0.1 over 100 epochs: the top-k then spans the whole queue); `:ball` the ball lesion.
`:runlocal` keeps the ResNet-50 at full width, trains on 256 Fashion-MNIST images with a 256-entry
queue.
"""

import os
import sys

import ml_collections

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:  # loaded by path (`--config=configs/X.py`) from any directory
    sys.path.insert(0, _ROOT)

from configs import common  # noqa: E402
from ssl_jax import configs  # noqa: E402
from ssl_jax.data import recipes  # noqa: E402
from ssl_jax.models import head_config  # noqa: E402


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False)
    c = configs.base_config()
    c.method = "mocoring"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=65536,
            # official DDP: 8 GPUs × 32 images, per-GPU BN (no SyncBN), keys shuffled across GPUs
            query_bn_group_size=32,
            key_bn_group_size=32,
            shuffle_bn=True,
            ring_outer=0.1,
            ring_inner=0.0 if a.ball else 0.1,  # `:ball` = the ball lesion
            anneal=a.anneal,
            max_anneal_epochs=100.0,
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
