"""IR (the Ring/CNCE code's `NCE` baseline) on STL-10: the code's numbers.

`ir_cifar100.py`, built by its `get_config` (the code's numbers and transforms, with their
sources), on the 5,000 labelled STL-10 training images as the code (`common.stl10_labelled_data`),
upsampled to 224 px, with a bank of all of them (k − 1 = 4095 draws from 5,000 rows). No ring: the
baseline of `iring_stl10.py`. `:runlocal` is the parent's.
"""

from configs import common, ir_cifar100


def get_config(arg=None):
    a = common.parse_arg(arg, mocov2_32x32=False)
    c = ir_cifar100.get_config(arg)
    if not a.runlocal:
        c.method_config.bank_size = 5000  # every training image
        common.stl10_labelled_data(c)  # the 5,000 labelled images, as the code
        common.ring_code_transforms(c, "ring", 1, a.mocov2_32x32)  # upsampled again
    return c
