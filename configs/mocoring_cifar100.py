"""MoCoRing (CNCE with a MoCo queue, the code's `MoCoRing`) on CIFAR-100: the code's numbers.

`mocoring_cifar10.py`, built by its `get_config` (the Ring code's CIFAR numbers, transforms, ring
keys and `:anneal` / `:ball` / `:mocov2_32x32`, with their sources), on CIFAR-100: the code uses one
config for both data sets. `:runlocal` is the parent's.
"""

from configs import mocoring_cifar10


def get_config(arg=None):
    c = mocoring_cifar10.get_config(arg)  # parses `arg` with the same names
    if c.data.name == "cifar10":  # not `:runlocal`'s stand-in
        c.data.name = "cifar100"
    return c
