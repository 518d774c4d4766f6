"""IRing (CNCE with a memory bank; Wu et al., ICLR 2021) on ImageNet: `ir_imagenet.py` with ring
negatives.

The Ring code has no ImageNet config: every number is `ir_imagenet.py`'s (ResNet-50, linear 128-d
head, bank of the first 1,281,152 images, K 4096 draws, τ 0.07, m 0.5, SGD 0.03 ×0.1 at 120/160 of
200 epochs), plus the code's ring (outer 0.1, inner 0.1). Not annealed by default (the released
code's policy); `:anneal=linear` is the paper's (outer 1.0 → 0.1 over 100 epochs); `:ball` the ball
lesion. The ring is found on the sharded bank by exact ranks (`sampling.ring_negatives`): the bank
is never gathered. `:runlocal` keeps the ResNet-50 at full width, trains on 256 Fashion-MNIST images
with a bank of 256 and 64 draws.
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
    c.method = "iring"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.07,
            num_negatives=4096,
            bank_size=common.IMAGENET_BANK_ROWS,
            bank_momentum=0.5,
            ring_outer=0.1,
            ring_inner=0.0 if a.ball else 0.1,  # `:ball` = the ball lesion
            anneal=a.anneal,
            max_anneal_epochs=100.0,
        )
    )

    common.imagenet_data(c)
    c.data.train_subset = common.IMAGENET_BANK_ROWS  # the bank splits evenly over ≤ 128 devices
    if a.runlocal:  # ImageNet is not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.update(bank_size=256, num_negatives=64)
    c.data.views = ("ir",)
    c.data.recipes = ml_collections.ConfigDict(
        {"ir": recipes.instance_discrimination(c.data.image_size)}
    )
    common.colour_ops_on_device(c)  # the host cannot feed an accelerator otherwise

    c.model.backbone = "resnet50"
    c.model.dtype = "auto"  # bfloat16 compute on GPU/TPU, float32 on CPU
    c.model.stem = "imagenet"
    c.model.projector = head_config((), 128, use_bn=False)  # linear 128-d head

    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.03
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "step"
    c.optim.decay_epochs = (120.0, 160.0)
    c.evals.knn.update(every_steps=25_000, num_train=100_000)
    if a.runlocal:
        common.runlocal(c)
        c.model.width = 1.0  # keep the real ResNet-50
    return c
