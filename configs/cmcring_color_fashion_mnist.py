"""CMCRing (ours: CMC with Ring/CNCE negatives; no code exists) on color_fashion_mnist at 32 px.

Every number is `cmc_color_fashion_mnist.py`'s (the baseline: Lab views L | ab, two encoders at
half the width, linear heads to 128, τ 0.07, bank momentum 0.5, 4096 negatives per direction of a
60,000-row bank per view, ResNet-18 CIFAR stem at width 1/2, batch 256, 3 epochs, SGD 0.06 cosine,
the final probe table) except the method, the loss and the ring keys: the negatives of each
direction (L against the ab bank, ab against the L bank) are 4095 draws (the Ring code's k − 1)
from a ring of outer 0.1 / inner 0.1 (the 90th–99th similarity percentiles), and the loss is the
softmax form (NCERing's; CMC's NCE assumes uniform noise, so `loss='nce'` is refused — compare with
`cmc_color_fashion_mnist.py` at `method_config.loss=softmax` for the same loss on uniform
negatives). Not annealed by default (the released Ring configs); `:anneal=linear` anneals the outer
fraction 1.0 → 0.1 over the first half of training (the paper's 100 of 200 epochs), `:ball` is the
ball lesion, `:space=ycbcr|ydbdr` other colour spaces. `:runlocal`: 6 steps of 32 images, a bank of
256 and 64 draws.
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
    a = common.parse_arg(arg, space="lab", anneal="constant", ball=False)
    c = configs.base_config()
    c.method = "cmcring"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.07,
            num_negatives=4095,
            bank_size=60_000,
            bank_momentum=0.5,
            loss="softmax",
            ring_outer=0.1,
            ring_inner=0.0 if a.ball else 0.1,  # `:ball` = the ball lesion
            anneal=a.anneal,
            max_anneal_epochs=1.5,
            query_bn_group_size=0,  # one accelerator: BN over the whole batch
        )
    )

    common.color_fashion_mnist_budget(c)
    c.data.views = ("cmc",)  # one crop; the model splits it into L and ab
    c.data.recipes = ml_collections.ConfigDict(
        {"cmc": recipes.cmc(c.data.image_size, a.space, scale=(0.2, 1.0))}
    )

    c.model.projector = head_config((), 128, use_bn=False)  # CMC: linear head to 128

    if a.runlocal:
        c.method_config.update(bank_size=256, num_negatives=64)
        common.runlocal(c)
    return c
