"""MoCoRing (CNCE with a MoCo queue, the code's `MoCoRing`) on STL-10: the code's numbers.

`mocoring_cifar10.py`, built by its `get_config` (the Ring code's numbers, transforms, ring keys and
`:anneal` / `:ball` / `:mocov2_32x32`, with their sources), on the 5,000 labelled STL-10 training
images as the code (`common.stl10_labelled_data`), upsampled to 224 px as the CIFAR images are.
`:runlocal` is the parent's.
"""

from configs import common, mocoring_cifar10


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False, mocov2_32x32=False)
    c = mocoring_cifar10.get_config(arg)
    if not a.runlocal:
        common.stl10_labelled_data(c)  # the 5,000 labelled images, as the code
        common.ring_code_transforms(c, "ring", 2, a.mocov2_32x32)  # upsampled again
    return c
