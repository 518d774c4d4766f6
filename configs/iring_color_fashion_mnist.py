"""IRing (CNCE, the Ring code's `NCERing`) on color_fashion_mnist at 32 px, on RGB:
`iring_fashion_mnist.py`'s method at `mocov2_color_fashion_mnist.py`'s data, encoder and budget.

Not an official configuration. The method's numbers are `iring_fashion_mnist.py`'s (IR's τ 0.07, K
4096 draws, bank momentum 0.5, the bank holding all 60,000 training images; ring outer 0.1 / inner
0.1, the code's defaults: negatives between the 90th and 99th percentile of similarity). Not
annealed by default, as every released config; `:anneal=linear` is the paper's setting scaled to
this run (outer 1.0 → 0.1 over the first half of training, 1.5 of 3 epochs, as the paper's 100 of
200); `:ball` is the ball lesion. The augmentation is MoCo v2's at 32 px without the blur, as every
color_fashion_mnist baseline (`recipes.mocov2(32, blur=False)`: RRC (0.2, 1), jitter 0.4/0.4/0.4/0.1
p 0.8, grayscale p 0.2, flip; the Ring code's 32-px transforms, `iring_cifar10.py:mocov2_32x32`, add
blur p 0.5), in place of the fashion config's `fashion_mnist_default` (brightness/contrast jitter
only, for grey images); not the code's default 224-px upsampled `instance_discrimination` input,
since this run stays at 32 px with the CIFAR stem. Encoder, head, batch, SGD and evals as
`mocov2_color_fashion_mnist.py` (ResNet-18 CIFAR stem at width 1/2, MLP 512-128, batch 256, 3
epochs, SGD 0.06 wd 5e-4 cosine, the final probe table), as `iring_fashion_mnist.py` repeats
`ir_fashion_mnist.py`'s (which are `mocov2_fashion_mnist.py`'s). Sources:
mhw32/contrastive-ring-public @fb3e1c2 (`src/objectives/instdisc.py` `NCERing` L117,
`src/utils/policy.py`). `:runlocal`: 6 steps of 32 images, a bank of 256 and 64 draws.
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
    c.method = "iring"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.07,
            num_negatives=4096,
            bank_size=60_000,
            bank_momentum=0.5,
            ring_outer=0.1,
            ring_inner=0.0 if a.ball else 0.1,  # `:ball` = the ball lesion
            anneal=a.anneal,
            max_anneal_epochs=1.5,
        )
    )

    common.color_fashion_mnist_budget(c)
    c.data.views = ("mocov2",)
    c.data.recipes = ml_collections.ConfigDict(
        {"mocov2": recipes.mocov2(c.data.image_size, blur=False)}
    )

    c.model.projector = head_config((512,), 128, use_bn=False)  # MLP 512-512-128

    if a.runlocal:
        c.method_config.update(bank_size=256, num_negatives=64)
        common.runlocal(c)
    return c
