"""ReSSL on color_fashion_mnist at 32 px, on RGB: `scce_color_fashion_mnist.py` with the ReSSL loss.

Not from a paper: everything as `scce_color_fashion_mnist.py` (its numbers are repeated here: weak
view → target, strong view → online, the official SCE CIFAR-10 views `recipes.cifar_soft(32)` /
`recipes.cifar_strong(32)` as `ressl_cifar10.py` — colour jitter, grayscale and blur on the strong
view, which `ressl_fashion_mnist.py`'s `fashion_mnist_default` leaves out because its images are
grey —, ResNet-18 CIFAR stem at width 1/2, projector → 256 (BN, ReLU) → 128, queue 4096, momentum
0.99 constant, shuffle-BN in 8 key BN groups of 32 on the target trunk, batch 256, 3 epochs, SGD lr
0.06 × batch/256, wd 5e-4 on every parameter, cosine, no warm-up, the final probe table, no kNN
monitor); only the loss and τ_m change, as `ressl_fashion_mnist.py` does from
`scce_fashion_mnist.py`.
The ReSSL loss (`methods/ressl.py`, `losses.ressl`: cross-entropy between the target's and the
online network's relations to the queue, no positive) takes τ 0.1 and τ_m 0.04 (the ReSSL paper's
values, solo-learn's defaults; the SCE paper uses "the best temperatures reported" by ReSSL).
`:runlocal` trains 6 steps of 32 images at width 1/8 with a 256-entry queue.
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
            symmetric=False,  # view 0 (weak) → target, view 1 (strong) → online
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

    common.color_fashion_mnist_budget(c)
    size = c.data.image_size
    c.data.views = ("weak", "strong")
    c.data.recipes = ml_collections.ConfigDict(
        {"weak": recipes.cifar_soft(size), "strong": recipes.cifar_strong(size)}
    )

    c.model.projector = head_config((256,), 128, hidden_bias=False)
    c.model.predictor.enabled = False

    c.optim.lr_scaling = "linear"
    c.optim.exclude_1d = False

    if a.runlocal:
        c.method_config.queue_size = 256  # divides the 32 keys of a runlocal step
        common.runlocal(c)
    return c
