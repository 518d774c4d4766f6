"""InfoMin on STL-10 at 64 px (ours: PyContrast has no STL-10 setting).

The paper's STL-10 experiments (its view studies, Sec. 3–4) train on 64-px crops of the 96-px
images; this is the ImageNet preset (`infomin_imagenet.py`: aug "D", jigsaw branch with β 0.5,
τ 0.15, MLP head, EMA 0.999 after the optimiser step, shuffle-BN in groups of 32, SGD lr 0.03
momentum 0.9 wd 1e-4, cosine per epoch to lr·0.1³ over epochs 1..E, batch 256, 200 epochs) on
the 100,000 `unlabelled` images with a ResNet-18 (CIFAR stem, as `cmc_stl10.py`'s encoders), a
queue of 16384 (ours: 65536 keys would be 65 % of the data set) and the jigsaw mosaic scaled from
255/85/64 px to 73/24/18 px. Evaluation at 64 px (resize of the 96-px test images), kNN monitor
every 4000 steps. `get_config('jigsaw=False')` drops the jigsaw branch. `:runlocal` trains on 256
color_fashion_mnist images with a queue of 256.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg, jigsaw=True)
    c = configs.base_config()
    c.method = "infomin"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.15,
            queue_size=16384,
            jigsaw=True,
            jigsaw_weight=0.5,
            query_bn_group_size=32,
            key_bn_group_size=32,
            shuffle_bn=True,
        )
    )
    c.ema.base = 0.999
    c.ema.schedule = "constant"

    # the paper's 64-px crops (evaluation resizes the 96-px images); CIFAR-10's std (ours)
    common.stl10_unlabelled_data(c, image_size=64, std=common.CIFAR10_STD)
    if a.runlocal:  # not on CPU CI
        common.color_fashion_mnist_data(c, size=32)
        c.method_config.queue_size = 256
    common.infomin_views(c, jigsaw=a.jigsaw)

    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.projector = head_config((512,), 128, use_bn=False)  # 'mlp' head at the R18 width

    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.03
    c.optim.momentum = 0.9
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "cosine"
    c.optim.schedule_unit = "epoch"
    c.optim.final_lr = 0.03 * 0.1**3
    c.optim.epoch_offset = 1.0  # PyContrast counts epochs from 1
    c.evals.knn.every_steps = 4000
    if a.runlocal:
        common.runlocal(c)
    return c
