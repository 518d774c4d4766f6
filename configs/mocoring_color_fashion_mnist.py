"""MoCoRing (CNCE, the Ring code's `MoCoRing`) on color_fashion_mnist at 32 px, on RGB:
`mocov2_color_fashion_mnist.py` with the queue restricted to a ring.

Not an official configuration. Everything as `mocov2_color_fashion_mnist.py` (built by its
`get_config`: the baseline of the comparison, τ 0.2, queue 4096, m 0.99, shuffle-BN in 8 key groups
of 32, MoCo v2's augmentation at 32 px without the blur, ResNet-18 CIFAR stem at width 1/2, MLP
512-128, batch 256, 3 epochs, SGD 0.06 wd 5e-4 cosine, the final probe table), as
`mocoring_fashion_mnist.py` derives from `mocov2_fashion_mnist.py`; only the method and the ring
keys change, as there: outer 0.1 / inner 0.1 (the code's defaults: the 369 queue entries at
descending positions 40 … 408 of each query). The augmentation (`recipes.mocov2(32, blur=False)`:
RRC (0.2, 1), jitter 0.4/0.4/0.4/0.1 p 0.8, grayscale p 0.2, flip) is the Ring code's 32-px
transforms without their blur p 0.5 (`mocoring_cifar10.py:mocov2_32x32`), in place of the fashion
config's `fashion_mnist_default` (brightness/contrast jitter only, for grey images). Not annealed by
default, as every released config; `:anneal=linear` is the paper's setting scaled to this run (outer
1.0 → 0.1 over 1.5 of 3 epochs, as the paper's 100 of 200); `:ball` is the ball lesion. Sources:
mhw32/contrastive-ring-public @fb3e1c2 (`src/objectives/moco.py` `MoCoRing` L109,
`src/utils/policy.py`). `:runlocal`: 6 steps of 32 images with the queue of 4096 and its ring as
above, as `mocoring_fashion_mnist.py` (not the parent's 256-entry runlocal queue).
"""

from configs import common, mocov2_color_fashion_mnist


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False)
    c = mocov2_color_fashion_mnist.get_config(common.parent_arg(arg, "anneal", "ball"))
    common.ring_from(c, "mocoring", a.anneal, a.ball, anneal_epochs=1.5)  # half of the 3 epochs
    if a.runlocal:
        c.method_config.queue_size = 4096  # the full queue, as `mocoring_fashion_mnist.py`
    return c
