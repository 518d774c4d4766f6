"""ReSSL on ImageNet-100, the relational baseline of SCE's ablation (paper Tab. 5: 81.58%).

Everything as `scce_imagenet100.py` (its numbers are repeated here; the paper's Sec. 4.1 setting:
ResNet-50, projector 2048 → 4096 (bias, ReLU) → 256 (bias) without BN as the SCE code's
`projector_resnet50_mlp2.yaml`, weak → target, strong → online, batch 512, SGD lr 0.3 × 512/256,
wd 1e-4, 5 warm-up epochs, queue 65536, momentum 0.996 → 1, 200 epochs, shuffle-BN with 8 key BN
groups, kNN monitor every 5000 steps); only the loss and τ_m change. ReSSL as its authors ran it
(EMA before the keys, m 0.999, 2048-4096-512 projector, ImageNet-1k) is `ressl_authors_imagenet.py`.
The ReSSL loss (`methods/ressl.py`, `losses.ressl`: cross-entropy between the target's and the
online network's relations to the queue, no positive) takes τ 0.1 and τ_m 0.04 (the ReSSL paper's
values, solo-learn's defaults; the SCE paper uses "the best temperatures reported" by ReSSL).
`:runlocal` trains a few steps on Fashion-MNIST.
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
    a = common.parse_arg(arg)
    c = configs.base_config()
    c.method = "ressl"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.1,  # ReSSL's τ and τ_m
            temperature_m=0.04,
            queue_size=65536,
            symmetric=False,  # view 0 (weak) → target, view 1 (strong) → online
            # the SCE code's default shuffle-BN on 8 GPUs (512 / 8 = 64 keys per BN group; our
            # reading, no official config), the online network with SyncBN
            shuffle_bn=True,
            query_bn_group_size=0,
            key_bn_group_size=64,
        )
    )
    c.ema.base = 0.996
    c.ema.schedule = "cosine"

    common.imagenet_data(c)
    common.image_folder_data(c, test_split="val")  # the ImageNet-100 folder (train/, val/)
    c.data.device_ops = True  # colour ops in the jitted step (the SCE code's GPU pipelines)
    if a.runlocal:  # not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.queue_size = 256  # divides the 32 keys of a runlocal step
    size = c.data.image_size
    c.data.views = ("weak", "strong")
    c.data.recipes = ml_collections.ConfigDict(
        {"weak": recipes.weak(size), "strong": recipes.strong(size)}
    )

    c.model.backbone = "resnet50"
    c.model.stem = "imagenet"
    c.model.projector = head_config((4096,), 256, use_bn=False)  # no BN, biases
    c.model.predictor.enabled = False

    c.global_batch_size = 512
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.3
    c.optim.lr_scaling = "linear"
    c.optim.momentum = 0.9
    c.optim.weight_decay = 1e-4
    c.optim.exclude_1d = False
    c.optim.schedule = "cosine"
    c.optim.warmup_epochs = 5.0
    c.optim.warmup_form = "sce"  # official scheduler: peak·t/(W−1), the peak at t = W−1
    c.evals.knn.every_steps = 5000
    if a.runlocal:
        c.optim.warmup_epochs = 0.25  # 2 of the 6 runlocal steps
        common.runlocal(c)
    return c
