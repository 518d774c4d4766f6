"""IRing (CNCE, the Ring code's `NCERing`) on Fashion-MNIST: `ir_fashion_mnist.py` with ring negatives.

Everything as `ir_fashion_mnist.py` (built by its `get_config`: the baseline of the comparison, τ
0.07, K 4096 draws, bank momentum 0.5, ResNet-18 CIFAR stem at width 1/4, batch 256, 3 epochs, SGD
0.06 cosine, the final probe table); only the method and the ring keys change: outer 0.1 / inner 0.1
(the code's defaults, negatives between the 90th and 99th percentile of similarity). Not annealed by
default, as every released config; `:anneal=linear` is the paper's setting scaled to this run (outer
1.0 → 0.1 over the first half of training, 1.5 of 3 epochs, as the paper's 100 of 200); `:ball` is
the ball lesion. Sources: mhw32/contrastive-ring-public @fb3e1c2 (`src/objectives/instdisc.py`
`NCERing` L117, `src/utils/policy.py`). `:runlocal` as `ir_fashion_mnist.py`: 6 steps of 32 images,
a bank of 256 and 64 draws.
"""

from configs import common, ir_fashion_mnist


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False)
    c = ir_fashion_mnist.get_config(common.parent_arg(arg, "anneal", "ball"))
    return common.ring_from(c, "iring", a.anneal, a.ball, anneal_epochs=1.5)  # half of the 3 epochs
