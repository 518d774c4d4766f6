"""Instance discrimination with a memory bank (IR; Wu et al. 2018, "Unsupervised Feature Learning via
Non-Parametric Instance Discrimination"), ImageNet.

Official lemniscate.pytorch: ResNet-50, linear 128-d head, memory bank of all 1,281,167 images, NCE with
K = 4096 negatives drawn uniformly (our loss is the softmax form the Ring code uses, positive in column 0),
τ 0.07, bank momentum 0.5, SGD lr 0.03, momentum 0.9, wd 1e-4, batch 256, 200 epochs with ×0.1 at 120 and
160. Augmentation as the Ring code's IR baseline: RRC(0.2–1), grayscale 0.2, colour jitter 0.4 (always), flip.
The data and the kNN monitor are `mocov2_imagenet.py`'s numbers (every 25,000 steps, 100,000 training
images). Ours: the bank and the training set are the first 1,281,152 images (`IMAGENET_BANK_ROWS`, 15
left out) so that the sharded bank splits evenly over up to 128 devices. `:runlocal` keeps the ResNet-50 at full width, trains on 256 Fashion-MNIST images with a bank of 256
and 64 negatives.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = configs.base_config()
    c.method = "ir"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.07,
            num_negatives=4096,
            bank_size=common.IMAGENET_BANK_ROWS,
            bank_momentum=0.5,
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
