"""ReSSL on Tiny-ImageNet, the relational baseline of SCE (paper Tab. 5).

Everything as `scce_tiny_imagenet.py` (the official CIFAR-10 config on a Tiny-ImageNet image folder
at 64 px, see its docstring for the folder layout; the paper's values are in its unavailable
supplementary); only the loss and τ_m change. The ReSSL loss takes τ 0.1 and τ_m 0.04
(`scce_cifar10.method_config` says what it computes and where the temperatures come from).
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from ssl_jax import configs


def get_config(arg=None):
    return configs.sibling(__file__, "scce_tiny_imagenet").build(arg, "ressl")
