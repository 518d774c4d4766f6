"""IRing (CNCE with a memory bank, the code's `NCERing`) on CIFAR-10: the code's numbers.

`iring_cifar100.py`, built by its `get_config` (the code's `NCE` baseline `ir_cifar100.py` with the
ring keys, and their sources), on CIFAR-10: the code uses one config for both data sets. IR's own
CIFAR-10 baseline is `ir_cifar10.py` (IR's m 0.5 and 32 px, not the Ring code's `NCE`).
`:runlocal` is the parent's.
"""

from configs import iring_cifar100


def get_config(arg=None):
    c = iring_cifar100.get_config(arg)  # parses `arg` with the same names
    if c.data.name == "cifar100":  # not `:runlocal`'s stand-in
        c.data.name = "cifar10"
    return c
