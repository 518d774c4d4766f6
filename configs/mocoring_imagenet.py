"""MoCoRing (CNCE with a MoCo queue; Wu et al., ICLR 2021) on ImageNet: `mocov2_imagenet.py` with the
queue restricted to a ring.

The Ring code has no ImageNet config: everything as `mocov2_imagenet.py` (built by its `get_config`:
ResNet-50, MLP 2048-2048-128, queue 65,536, τ 0.2, m 0.999, per-GPU BN with shuffle-BN, SGD 0.03
cosine, 200 epochs); only the method and the code's ring change (outer 0.1, inner 0.1,
`common.ring_keys`: all 5,898 queue entries at descending positions 655 … 6,552). Not annealed by
default (the released code's policy); `:anneal=linear` is the paper's (outer 1.0 → 0.1 over 100
epochs: the top-k then spans the whole queue); `:ball` the ball lesion. `:runlocal` as
`mocov2_imagenet.py`: the ResNet-50 at full width, 256 Fashion-MNIST images, a 256-entry queue.
"""

from configs import common, mocov2_imagenet


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False)
    c = mocov2_imagenet.get_config(common.parent_arg(arg, "anneal", "ball"))
    return common.ring_from(c, "mocoring", a.anneal, a.ball)
