"""MoCoRing (CNCE, the Ring code's `MoCoRing`) on color_fashion_mnist at 32 px, on RGB:
`mocov2_color_fashion_mnist.py` with the queue restricted to a ring.

Not an official configuration. Every number is `mocov2_color_fashion_mnist.py`'s (the baseline of
the comparison: τ 0.2, queue 4096, m 0.99, shuffle-BN in 8 key groups of 32, MoCo v2's augmentation
at 32 px without the blur, ResNet-18 CIFAR stem at width 1/2, MLP 512-128, batch 256, 3 epochs, SGD
0.06 wd 5e-4 cosine, the final probe table), as `mocoring_fashion_mnist.py` repeats
`mocov2_fashion_mnist.py`'s; only the method and the ring keys differ, as there: outer 0.1 / inner
0.1 (the code's defaults: the 369 queue entries at descending positions 40 … 408 of each query). The
augmentation (`recipes.mocov2(32, blur=False)`: RRC (0.2, 1), jitter 0.4/0.4/0.4/0.1 p 0.8,
grayscale p 0.2, flip) is the Ring code's 32-px transforms without their blur p 0.5
(`mocoring_cifar10.py:mocov2_32x32`), in place of the fashion config's `fashion_mnist_default`
(brightness/contrast jitter only, for grey images). Not annealed by default, as every released
config; `:anneal=linear` is the paper's setting scaled to this run (outer 1.0 → 0.1 over 1.5 of 3
epochs, as the paper's 100 of 200); `:ball` is the ball lesion. Sources:
mhw32/contrastive-ring-public @fb3e1c2 (`src/objectives/moco.py` `MoCoRing` L109,
`src/utils/policy.py`). `:runlocal`: 6 steps of 32 images (the queue and its ring as above, as
`mocoring_fashion_mnist.py`).
"""

import os
import sys

import ml_collections

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:  # loaded by path (`--config=configs/X.py`) from any directory
    sys.path.insert(0, _ROOT)

from configs import common  # noqa: E402
from ssl_jax import configs  # noqa: E402
from ssl_jax.data import recipes  # noqa: E402
from ssl_jax.models import head_config  # noqa: E402


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False)
    c = configs.base_config()
    c.method = "mocoring"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=4096,
            # one accelerator: the online network on the whole batch, the keys in 8 shuffled BN
            # groups (as MoCo's shuffle-BN over 8 GPUs)
            query_bn_group_size=0,
            key_bn_group_size=32,
            shuffle_bn=True,
            ring_outer=0.1,
            ring_inner=0.0 if a.ball else 0.1,  # `:ball` = the ball lesion
            anneal=a.anneal,
            max_anneal_epochs=1.5,
        )
    )
    c.ema.base = 0.99

    common.color_fashion_mnist_budget(c)
    c.data.views = ("mocov2", "mocov2")
    c.data.recipes = ml_collections.ConfigDict(
        {"mocov2": recipes.mocov2(c.data.image_size, blur=False)}
    )

    c.model.projector = head_config((512,), 128, use_bn=False)  # MLP 512-512-128

    if a.runlocal:
        common.runlocal(c)
    return c
