"""IR (memory-bank instance discrimination) on Fashion-MNIST: a small CPU run.

IR's loss and bank (τ 0.07, K 4096 uniform negatives, bank momentum 0.5; `ir_imagenet.py`'s values)
with the small encoder, data, recipe and SGD of `mocov2_fashion_mnist.py` (ResNet-18, CIFAR stem,
width 1/4, MLP 256-128, batch 256, 3 epochs, SGD lr 0.06 wd 5e-4 cosine) and its final probe table;
the bank holds all 60,000 training images. `:runlocal`: 6 steps of 32 images at width 1/8, a bank of
256 and 64 negatives.
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
    c.method = "ir"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.07,
            num_negatives=4096,
            bank_size=60_000,
            bank_momentum=0.5,
            bank_init="normal",  # the Ring code's is "uniform" (src/objectives/memory.py)
        )
    )

    common.fashion_mnist_data(c, channels=1)
    c.data.train_subset = 0
    c.data.shuffle_buffer = 60_000
    c.data.views = ("fashion",)
    c.data.recipes = ml_collections.ConfigDict({"fashion": recipes.fashion_mnist_default(28)})

    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.width = 0.25
    c.model.projector = head_config((256,), 128, use_bn=False)  # MLP 256-128

    c.global_batch_size = 256
    c.num_epochs = 3.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.06
    c.optim.weight_decay = 5e-4
    c.optim.schedule = "cosine"
    c.optim.warmup_epochs = 0.0

    c.log_every_steps = 20
    c.checkpoint_every_steps = 200
    # the final probe table replaces the kNN monitor on the default job
    c.evals.knn.update(every_steps=-1, batch_size=512)
    # eval batches of 512 (the figures in docs/ were measured with 500): a multiple of 8 devices
    c.evals.probe_table.update(every_steps=0, num_train=-1, batch_size=512)
    if a.runlocal:
        c.method_config.update(bank_size=256, num_negatives=64)
        common.runlocal(c)
    return c
