"""ReSSL on Tiny-ImageNet, the relational baseline of SCE (paper Tab. 5).

Everything as `scce_tiny_imagenet.py` (built by its `get_config`: the official CIFAR-10 config on a Tiny-ImageNet image folder
at 64 px, see its docstring for the folder layout; the paper's values are in its unavailable
supplementary); only the loss and τ_m change.
The ReSSL loss (`methods/ressl.py`, `losses.ressl`: cross-entropy between the target's and the
online network's relations to the queue, no positive) takes τ 0.1 and τ_m 0.04 (the ReSSL paper's
values, solo-learn's defaults; the SCE paper uses "the best temperatures reported" by ReSSL).
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from configs import scce_tiny_imagenet


def get_config(arg=None):
    c = scce_tiny_imagenet.get_config(arg)
    c.method = "ressl"
    del c.method_config["coeff"]  # SCE's mix of the one-hot and the relational target
    c.method_config.temperature_m = 0.04  # ReSSL's τ_m (SCE's: 0.05)
    return c
