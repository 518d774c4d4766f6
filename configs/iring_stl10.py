"""IRing (CNCE with a memory bank, the code's `NCERing`) on STL-10: the code's numbers.

`ir_stl10.py` (the code's `NCE` baseline on the 5,000 labelled images) with the ring keys, as
`iring_cifar100.py` adds them to `ir_cifar100.py`. `:runlocal` is the parent's.
"""

from configs import common, ir_stl10


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False, mocov2_32x32=False)
    c = ir_stl10.get_config(common.parent_arg(arg, "anneal", "ball"))
    return common.ring_from(c, "iring", a.anneal, a.ball)
