"""ReSSL on Tiny-ImageNet, the relational baseline of SCE (paper Tab. 5).

Everything as `sce_tiny_imagenet.py` (built by its `get_config`: the official CIFAR-10 config on a Tiny-ImageNet image folder
at 64 px, see its docstring for the folder layout; the paper's values are in its unavailable
supplementary); only the loss and τ_m change.
The ReSSL loss and τ_m 0.04 as `common.ressl_from_sce` says.
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from configs import common, sce_tiny_imagenet


def get_config(arg=None):
    return common.ressl_from_sce(sce_tiny_imagenet.get_config(arg))
