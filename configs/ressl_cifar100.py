"""ReSSL on CIFAR-100, the relational baseline of SCE (paper Tab. 5).

Everything as `scce_cifar100.py` (built by its `get_config`: itself the official CIFAR-10 config on CIFAR-100; the paper's
CIFAR-100 values are in its unavailable supplementary); only the loss and τ_m change.
The ReSSL loss (`methods/ressl.py`, `losses.ressl`: cross-entropy between the target's and the
online network's relations to the queue, no positive) takes τ 0.1 and τ_m 0.04 (the ReSSL paper's
values, solo-learn's defaults; the SCE paper uses "the best temperatures reported" by ReSSL).
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from configs import scce_cifar100


def get_config(arg=None):
    c = scce_cifar100.get_config(arg)
    c.method = "ressl"
    del c.method_config["coeff"]  # SCE's mix of the one-hot and the relational target
    c.method_config.temperature_m = 0.04  # ReSSL's τ_m (SCE's: 0.05)
    return c
