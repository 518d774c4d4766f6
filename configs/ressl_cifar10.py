"""ReSSL on CIFAR-10, the relational baseline of SCE (paper Tab. 5) in SCE's CIFAR-10 setting.

Everything as `scce_cifar10.py` (its numbers are repeated here; the official SCE CIFAR-10 config: ResNet-18 CIFAR stem, 512-512-128
projector, weak/soft view → target, strong view → online, queue 4096, momentum 0.99, SplitBN 8
groups, SGD lr 0.06 wd 5e-4, batch 256, 200 epochs): the SCE paper reproduces its baselines with
"the same architecture for all methods"; only the loss and τ_m change.
The ReSSL loss (`methods/ressl.py`, `losses.ressl`: cross-entropy between the target's and the
online network's relations to the queue, no positive) takes τ 0.1 and τ_m 0.04 (the ReSSL paper's
values, solo-learn's defaults; the SCE paper uses "the best temperatures reported" by ReSSL).
ReSSL as its authors ran it (EMA before the keys, 512-2048-128 projector without BN) is
`ressl_authors_cifar10.py`.
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
            queue_size=4096,
            symmetric=False,  # view 0 (soft) → target, view 1 (strong) → online
            # SplitBN as the official one-GPU run (`simulate_n_devices: 8`): the target trunk's
            # BatchNorm2d in 8 groups, the projector's BN and the online network on the whole batch
            shuffle_bn=True,
            query_bn_group_size=0,
            key_bn_group_size=32,
            bn_group_scope="backbone",
        )
    )
    c.ema.base = 0.99
    c.ema.schedule = "constant"

    common.cifar10_data(c)
    if a.runlocal:  # not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.queue_size = 256  # divides the 32 keys of a runlocal step
    size = c.data.image_size
    c.data.views = ("soft", "strong")
    c.data.recipes = ml_collections.ConfigDict(
        {"soft": recipes.cifar_soft(size), "strong": recipes.cifar_strong(size)}
    )

    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.projector = head_config((512,), 128, hidden_bias=False)
    c.model.predictor.enabled = False

    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.06
    c.optim.lr_scaling = "linear"
    c.optim.momentum = 0.9
    c.optim.nesterov = False
    c.optim.weight_decay = 5e-4
    c.optim.exclude_1d = False
    c.optim.schedule = "cosine"
    c.optim.warmup_epochs = 5.0
    c.optim.warmup_form = "sce"  # official scheduler: peak·t/(W−1), the peak at t = W−1
    c.evals.knn.every_steps = 2000
    if a.runlocal:
        c.optim.warmup_epochs = 0.25  # 2 of the 6 runlocal steps
        common.runlocal(c)
    return c
