"""ReSSL on STL-10, the relational baseline of SCE (paper Tab. 5).

Everything as `scce_stl10.py` (built by its `get_config`: the official CIFAR-10 config on STL-10's unlabelled split at 96 px;
the paper's STL-10 values are in its unavailable supplementary); only the loss and τ_m change.
The ReSSL loss (`methods/ressl.py`, `losses.ressl`: cross-entropy between the target's and the
online network's relations to the queue, no positive) takes τ 0.1 and τ_m 0.04 (the ReSSL paper's
values, solo-learn's defaults; the SCE paper uses "the best temperatures reported" by ReSSL).
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from configs import scce_stl10


def get_config(arg=None):
    c = scce_stl10.get_config(arg)
    c.method = "ressl"
    del c.method_config["coeff"]  # SCE's mix of the one-hot and the relational target
    c.method_config.temperature_m = 0.04  # ReSSL's τ_m (SCE's: 0.05)
    return c
