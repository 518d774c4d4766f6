"""CMC (L | ab, memory banks) on color_fashion_mnist at 32 px: a small CPU run.

CMC's loss and banks as the official `train_CMC.py` (HobbitLong/CMC): Lab views (L 1 channel, ab 2),
two encoders at half the configured width, linear heads to 128, τ 0.07, bank momentum 0.5, NCE loss
with Z fixed at the first step (code default; `method_config.loss='softmax'` is the code's
`--softmax`, which the maintainer recommends on small data sets, CMC issue #12), RRC scale (0.2, 1)
(the code's `--crop_low` 0.2, its AlexNet value), flip, no colour jitter. Ours, for this small data set: K 4096 of
the 60,000 bank rows, the encoder, batch and SGD of `ir_fashion_mnist.py` (ResNet-18 with the CIFAR
stem, width 1/2 = two encoders of width 1/4, batch 256, 3 epochs, lr 0.06, wd 5e-4, cosine) and its
final probe table. Other colour spaces: `:space=ycbcr` (CMC README: 0.5–1 % better on ImageNet) or
`:space=ydbdr` (PyContrast); `:flow=PATH` trains on the views of a learned colour space (InfoMin Sec.
4.2, the `flow.npz` of `python -m ssl_jax.view_learning`). `:runlocal`: 6 steps of 32 images at width 1/8, a bank of 256 and 64
negatives.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg, space="lab", flow="")
    c = configs.base_config()
    c.method = "cmc"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.07,
            num_negatives=4096,
            bank_size=60_000,
            bank_momentum=0.5,
            loss="nce",
            query_bn_group_size=0,  # one accelerator: BN over the whole batch
        )
    )

    common.small_budget(c, color=True)
    c.data.views = ("cmc",)  # one crop; the model splits it into L and ab
    cmc_view = recipes.cmc(c.data.image_size, a.space, scale=(0.2, 1.0))
    if a.flow:  # InfoMin's learned views: g's colour space in place of Lab
        cmc_view = (*cmc_view[:-1], {"op": "learned_flow", "path": a.flow})
    c.data.recipes = ml_collections.ConfigDict({"cmc": cmc_view})

    c.model.projector = head_config((), 128, use_bn=False)  # CMC: linear head to 128

    if a.runlocal:
        c.method_config.update(bank_size=256, num_negatives=64)
        common.runlocal(c)
    return c
