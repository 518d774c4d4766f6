"""MoCoRing (CNCE, the Ring code's `MoCoRing`) on Fashion-MNIST: `mocov2_fashion_mnist.py` with the
queue restricted to a ring.

Everything as `mocov2_fashion_mnist.py` (built by its `get_config`: the baseline of the comparison,
τ 0.2, queue 4096, m 0.99, shuffle-BN in 8 key groups, ResNet-18 CIFAR stem at width 1/4, batch 256,
3 epochs, SGD 0.06 cosine, the final probe table); only the method and the ring keys change: outer
0.1 / inner 0.1 (the code's defaults: the 369 queue entries at descending positions 40 … 408 of each
query). Not annealed by default, as every released config; `:anneal=linear` is the paper's setting
scaled to this run (outer 1.0 → 0.1 over 1.5 of 3 epochs, as the paper's 100 of 200); `:ball` is the
ball lesion. Sources: mhw32/contrastive-ring-public @fb3e1c2 (`src/objectives/moco.py` `MoCoRing`
L109, `src/utils/policy.py`). `:runlocal` as `mocov2_fashion_mnist.py`: 6 steps of 32 images (the
queue and its ring as above).
"""

from configs import common, mocov2_fashion_mnist


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False)
    c = mocov2_fashion_mnist.get_config(common.parent_arg(arg, "anneal", "ball"))
    return common.ring_from(
        c, "mocoring", a.anneal, a.ball, anneal_epochs=1.5
    )  # half of the 3 epochs
