"""Instance discrimination with a memory bank (IR; Wu et al. 2018, "Unsupervised Feature Learning via
Non-Parametric Instance Discrimination"), ImageNet.

Official lemniscate.pytorch: ResNet-50, linear 128-d head, memory bank of all 1,281,167 images, NCE with
K = 4096 negatives drawn uniformly (our loss is the softmax form the Ring code uses, positive in column 0),
τ 0.07, bank momentum 0.5, SGD lr 0.03, momentum 0.9, wd 1e-4, batch 256, 200 epochs with ×0.1 at 120 and
160. Augmentation as the Ring code's IR baseline: RRC(0.2–1), grayscale 0.2, colour jitter 0.4 (always), flip.
`:runlocal` keeps the architecture, trains on 256 Fashion-MNIST images with a bank of 256.
The data, encoder and SGD are `mocov2_imagenet.setting` (the same numbers) but for the linear head
and the step schedule; `build` makes `ir_cifar10.py` the same way from `mocov2_cifar10.setting`.
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.data import recipes


def method_config(arg, *, bank_size: int) -> ml_collections.ConfigDict:
    """IR's loss and bank, τ 0.07, K 4096 uniform negatives, bank momentum 0.5, with a bank of
    `bank_size` (the training set); `:runlocal`: a bank of 256 and 64 negatives."""
    mc = ml_collections.ConfigDict(
        dict(temperature=0.07, num_negatives=4096, bank_size=bank_size, bank_momentum=0.5)
    )
    if configs.is_runlocal(arg):
        mc.update(bank_size=256, num_negatives=64)
    return mc


def build(arg, setting, *, bank_size, decay_epochs, edit=None):
    """IR on the data, encoder and SGD of the MoCo v2 config `configs/<setting>.py` (its `setting`),
    with ×0.1 at `decay_epochs`; `edit(config)` runs before `:runlocal`, and the recipe follows
    `config.data.image_size`."""
    c = configs.base_config()
    c.method = "ir"
    c.method_config = method_config(arg, bank_size=bank_size)
    configs.sibling(__file__, setting).setting(c)
    c.optim.schedule = "step"
    c.optim.decay_epochs = decay_epochs
    if edit is not None:
        edit(c)
    if configs.is_runlocal(arg):
        configs.use_local_data(c)
    c.data.views = ("ir",)
    c.data.recipes = ml_collections.ConfigDict(
        {"ir": recipes.instance_discrimination(c.data.image_size)}
    )
    return configs.finalize(c, arg)


def _linear_head(c):
    c.model.projector.hidden_dims = ()  # linear 128-d head


def get_config(arg=None):
    c = build(
        arg,
        "mocov2_imagenet",
        bank_size=1_281_167,
        decay_epochs=(120.0, 160.0),
        edit=_linear_head,
    )
    if configs.is_runlocal(arg):
        c.model.width = 1.0  # keep the real ResNet-50
    return c
