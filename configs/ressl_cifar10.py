"""ReSSL on CIFAR-10, the relational baseline of SCE (paper Tab. 5) in SCE's CIFAR-10 setting.

Everything as `scce_cifar10.py` (the official SCE CIFAR-10 config: ResNet-18 CIFAR stem, 512-512-128
projector, weak/soft view → target, strong view → online, queue 4096, momentum 0.99, SplitBN 8
groups, SGD lr 0.06 wd 5e-4, batch 256, 200 epochs): the SCE paper reproduces its baselines with
"the same architecture for all methods"; only the loss and τ_m change.
The ReSSL loss takes τ 0.1 and τ_m 0.04 (`scce_cifar10.method_config` says what it computes and
where the temperatures come from).
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from ssl_jax import configs


def get_config(arg=None):
    return configs.sibling(__file__, "scce_cifar10").build(arg, "ressl")
