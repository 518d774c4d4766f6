"""SCE on CIFAR-100: the official CIFAR-10 config (`sce_cifar10.py`) on CIFAR-100.

The paper's CIFAR-100 hyper-parameters (τ_m, queue size, weight decay, ...) are only in its
supplementary material, which is not available here, and neither the CEA-LIST/SCE nor the eztorch
code has a CIFAR-100 run config. So every value is the CIFAR-10 one, the config built by `sce_cifar10.py`'s `get_config` (ResNet-18 CIFAR stem,
512-512-128 projector, soft → target / strong → online, τ 0.1, τ_m 0.05, λ 0.5, queue 4096,
momentum 0.99, SplitBN 8 groups, SGD lr 0.06 wd 5e-4, 5 warm-up epochs, batch 256, 200 epochs);
only the data and the normalisation change (the SCE code's CIFAR-100 mean/std,
`common.CIFAR100_MEAN/STD`). Check the supplementary table before comparing numbers. `:runlocal`
trains on Fashion-MNIST.
"""

from configs import common, sce_cifar10


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = sce_cifar10.get_config(arg)
    if not a.runlocal:
        c.data.name = "cifar100"
        c.data.mean, c.data.std = common.CIFAR100_MEAN, common.CIFAR100_STD
    return c
