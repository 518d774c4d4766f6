"""IRing (CNCE with a memory bank; Wu et al., ICLR 2021) on ImageNet: `ir_imagenet.py` with ring
negatives.

The Ring code has no ImageNet config: everything as `ir_imagenet.py` (built by its `get_config`:
ResNet-50, linear 128-d head, bank of the first 1,281,152 images, K 4096 draws, τ 0.07, m 0.5, SGD
0.03 ×0.1 at 120/160 of 200 epochs); only the method and the code's ring change (outer 0.1, inner
0.1, `common.ring_keys`). Not annealed by default (the released code's policy); `:anneal=linear` is
the paper's (outer 1.0 → 0.1 over 100 epochs); `:ball` the ball lesion. The ring is found on the
sharded bank by exact ranks (`sampling.ring_negatives`): the bank is never gathered. `:runlocal` as
`ir_imagenet.py`: the ResNet-50 at full width, 256 Fashion-MNIST images, a bank of 256 and 64 draws.
"""

from configs import common, ir_imagenet


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False)
    c = ir_imagenet.get_config(common.parent_arg(arg, "anneal", "ball"))
    return common.ring_from(c, "iring", a.anneal, a.ball)
