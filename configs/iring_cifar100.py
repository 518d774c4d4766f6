"""IRing (CNCE with a memory bank, the code's `NCERing`) on CIFAR-100: the code's numbers.

`ir_cifar100.py`, built by its `get_config` (the code's `NCE` baseline with its sources: ResNet-18
with the ImageNet stem, k − 1 = 4095 draws from a bank of all 50,000 training images, the code's
224-px transforms or `:mocov2_32x32`), with the method and the ring keys of every released config
(`common.ring_keys`: outer 0.1 / inner 0.1, annealing off; `:anneal=linear` the paper's setting,
`:anneal=step|exponential|adaptive_loss` the code's other policies, `:ball` the ball lesion).
Sources of the ring: mhw32/contrastive-ring-public @fb3e1c2 (`config/pretrain/nce/*.json`,
`src/objectives/instdisc.py` `NCERing`, `src/utils/policy.py`). `:runlocal` is the parent's.
"""

from configs import common, ir_cifar100


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False, mocov2_32x32=False)
    c = ir_cifar100.get_config(common.parent_arg(arg, "anneal", "ball"))
    return common.ring_from(c, "iring", a.anneal, a.ball)
