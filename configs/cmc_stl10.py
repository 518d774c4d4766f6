"""CMC (L | ab, memory banks) on STL-10, the paper's setting as far as it is published.

The STL-10 script was never released (CMC issue #4: the maintainer suggests modifying `train_CMC.py`
following the paper). README: τ 0.1 for STL-10 (`--nce_t 0.1`). Paper: Lab split into L | ab, 64-px
crops of the 96-px images. Code (`train_CMC.py` defaults): K 16384, bank momentum 0.5, NCE loss with
Z fixed at the first step, RRC scale (0.2, 1) (`--crop_low` default), flip, no colour jitter, SGD
lr 0.03 momentum 0.9 wd 1e-4, 240 epochs with lr ×0.1 at 120, 160 and 200, batch 128. Ours: the
paper's encoder is a half-AlexNet per view adapted to 64 px; this library has ResNets, so each view
gets a ResNet-18 with the CIFAR stem at width 0.5 (`model.width` 1.0 halved), linear heads to 128;
training on the 100,000 `unlabelled` images (the paper also uses the 5,000 `train` ones:
`--config.data.train_split=unlabelled+train` with `bank_size=105000`), evaluation at 64 px (resize of
the 96-px test images), kNN monitor every 4000 steps. `:runlocal` trains on 256 color_fashion_mnist
images with a bank of 256 and 64 negatives.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg, space="lab")
    c = configs.base_config()
    c.method = "cmc"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.1,  # README: 0.1 for STL-10
            num_negatives=16384,
            bank_size=100_000,
            bank_momentum=0.5,
            loss="nce",
            query_bn_group_size=0,
        )
    )

    # the paper's 64-px crops (evaluation resizes the 96-px images); CIFAR-10's std (ours)
    common.stl10_unlabelled_data(c, image_size=64, std=common.CIFAR10_STD)
    if a.runlocal:  # not on CPU CI
        common.color_fashion_mnist_data(c, size=32)
        c.method_config.update(bank_size=256, num_negatives=64)
    c.data.views = ("cmc",)
    c.data.recipes = ml_collections.ConfigDict(
        {"cmc": recipes.cmc(c.data.image_size, a.space, scale=(0.2, 1.0))}
    )

    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.width = 1.0  # two encoders of width 0.5
    c.model.projector = head_config((), 128, use_bn=False)

    c.global_batch_size = 128
    c.num_epochs = 240.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.03
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "step"
    c.optim.schedule_unit = "epoch"
    c.optim.decay_epochs = (120.0, 160.0, 200.0)
    c.optim.decay_factor = 0.1
    c.evals.knn.every_steps = 4000
    if a.runlocal:
        common.runlocal(c)
    return c
