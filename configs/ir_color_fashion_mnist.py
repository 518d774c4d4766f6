"""IR (memory-bank instance discrimination) on color_fashion_mnist at 32 px, on RGB: the baseline of
IRing's colour row, `ir_fashion_mnist.py`'s method at `mocov2_color_fashion_mnist.py`'s data,
encoder and budget.

Not an official configuration. `ir_fashion_mnist.py`, built by its `get_config`: IR's loss and
bank (τ 0.07, K 4096 uniform
negatives, bank momentum 0.5, the bank holding all 60,000 training images). The augmentation is
`iring_color_fashion_mnist.py`'s (`recipes.mocov2(32, blur=False)`, the Ring code's 32-px transforms
without their blur), so that IR and IRing differ only in the method, as on Fashion-MNIST. Encoder,
head, batch, SGD and evals as `mocov2_color_fashion_mnist.py` (ResNet-18 CIFAR stem at width 1/2,
MLP 512-128, batch 256, 3 epochs, SGD 0.06 wd 5e-4 cosine, the final probe table). `:runlocal`: 6
steps of 32 images, a bank of 256 and 64 negatives.
"""

import ml_collections

from configs import common, ir_fashion_mnist
from ssl_jax.data import recipes


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = ir_fashion_mnist.get_config(common.parent_arg(arg, "runlocal"))
    common.small_budget(c, color=True)
    c.data.views = ("mocov2",)
    c.data.recipes = ml_collections.ConfigDict({"mocov2": recipes.mocov2(32, blur=False)})
    c.model.projector.hidden_dims = (512,)  # MLP 512-512-128
    if a.runlocal:
        c.method_config.update(bank_size=256, num_negatives=64)
        common.runlocal(c)
    return c
