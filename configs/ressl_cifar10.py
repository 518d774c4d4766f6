"""ReSSL on CIFAR-10, the relational baseline of SCE (paper Tab. 5) in SCE's CIFAR-10 setting.

Everything as `sce_cifar10.py` (built by its `get_config`: the official SCE CIFAR-10 config: ResNet-18 CIFAR stem, 512-512-128
projector, weak/soft view → target, strong view → online, queue 4096, momentum 0.99, SplitBN 8
groups, SGD lr 0.06 wd 5e-4, batch 256, 200 epochs): the SCE paper reproduces its baselines with
"the same architecture for all methods"; only the loss and τ_m change.
The ReSSL loss and τ_m 0.04 as `common.ressl_from_sce` says.
ReSSL as its authors ran it (EMA before the keys, 512-2048-128 projector without BN) is
`ressl_authors_cifar10.py`.
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from configs import common, sce_cifar10


def get_config(arg=None):
    return common.ressl_from_sce(sce_cifar10.get_config(arg))
