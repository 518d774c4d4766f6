"""SCE on CIFAR-100: the official CIFAR-10 config (`scce_cifar10.py`) on CIFAR-100.

The paper's CIFAR-100 hyper-parameters (τ_m, queue size, weight decay, ...) are only in its
supplementary material, which is not available here, and neither the CEA-LIST/SCE nor the eztorch
code has a CIFAR-100 run config. So every value is the CIFAR-10 one (ResNet-18 CIFAR stem,
512-512-128 projector, soft → target / strong → online, τ 0.1, τ_m 0.05, λ 0.5, queue 4096,
momentum 0.99, SplitBN 8 groups, SGD lr 0.06 wd 5e-4, 5 warm-up epochs, batch 256, 200 epochs);
only the data and the normalisation change (the SCE code's CIFAR-100 mean/std,
`common.CIFAR100_MEAN/STD`). Check the supplementary table before comparing numbers. `:runlocal`
trains on Fashion-MNIST.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = configs.base_config()
    c.method = "sce"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.1,
            temperature_m=0.05,
            coeff=0.5,
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
    c.data.name = "cifar100"
    c.data.mean, c.data.std = common.CIFAR100_MEAN, common.CIFAR100_STD
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
