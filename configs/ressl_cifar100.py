"""ReSSL on CIFAR-100, the relational baseline of SCE (paper Tab. 5).

Everything as `sce_cifar100.py` (built by its `get_config`: itself the official CIFAR-10 config on CIFAR-100; the paper's
CIFAR-100 values are in its unavailable supplementary); only the loss and τ_m change.
The ReSSL loss and τ_m 0.04 as `common.ressl_from_sce` says.
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from configs import common, sce_cifar100


def get_config(arg=None):
    return common.ressl_from_sce(sce_cifar100.get_config(arg))
