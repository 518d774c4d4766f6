"""ReSSL on Fashion-MNIST: the small CPU job of `scce_fashion_mnist.py` with the ReSSL loss.

Not from a paper: everything as `scce_fashion_mnist.py` (its numbers are repeated here: weak view
→ target, `fashion_mnist_default` jitter view → online, full-width ResNet-18 with the ImageNet stem
on 28-px grayscale, projector 512 → 256 (BN, ReLU) → 128, queue 4096, momentum 0.99, shuffle-BN in
8 key BN groups, batch 64, 2400 steps (~2.6 epochs), SGD lr 0.24 × 64/256 = 0.06, wd 5e-4, no
warm-up, final linear-probe table on every stage's pooled output, no kNN monitor); only the loss and
τ_m change.
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
            key_bn_group_size=8,
            bn_group_scope="backbone",
        )
    )
    c.ema.base = 0.99
    c.ema.schedule = "constant"

    common.fashion_mnist_data(c, channels=1)
    c.data.train_subset = 0
    c.data.shuffle_buffer = 60_000
    c.data.views = ("weak", "strong")
    c.data.recipes = ml_collections.ConfigDict(
        {"weak": recipes.weak(28), "strong": recipes.fashion_mnist_default(28)}
    )

    c.model.backbone = "resnet18"
    c.model.stem = "imagenet"  # 28 → 7 px before stage 1: cheap enough for a 512-d encoder on a CPU
    c.model.width = 1.0
    c.model.projector = head_config((256,), 128, hidden_bias=False)
    c.model.predictor.enabled = False

    c.global_batch_size = 64  # more updates per image seen: the budget is CPU time, not epochs
    c.num_epochs = 3.0
    c.total_steps = 2400  # ~2.6 epochs at batch 64: the default job's budget on 2 CPU cores
    c.optim.name = "sgd"
    c.optim.base_lr = 0.24  # × 64/256 (linear scaling) = 0.06, SCE's CIFAR lr
    c.optim.lr_scaling = "linear"
    c.optim.weight_decay = 5e-4
    c.optim.exclude_1d = False
    c.optim.schedule = "cosine"
    c.optim.warmup_epochs = 0.0

    c.log_every_steps = 20
    c.checkpoint_every_steps = 500  # a ~125 MB state: every ~2.5 min
    # the final probe table replaces the kNN monitor on the default job
    c.evals.knn.update(every_steps=-1, num_train=10_000, batch_size=512)
    # eval batches of 512 (the figures in the README were measured with 500): a multiple of 8 devices
    c.evals.probe_table.update(every_steps=0, num_train=-1, batch_size=512, features="stages")
    if a.runlocal:
        c.method_config.queue_size = 256  # divides the 32 keys of a runlocal step
        common.runlocal(c)
    return c
