"""Instance discrimination with a memory bank (IR; Wu et al. 2018, "Unsupervised Feature Learning via
Non-Parametric Instance Discrimination"), ImageNet.

Official lemniscate.pytorch: ResNet-50, linear 128-d head, memory bank of all 1,281,167 images, NCE with
K = 4096 negatives drawn uniformly (our loss is the softmax form the Ring code uses, positive in column 0),
τ 0.07, bank momentum 0.5, SGD lr 0.03, momentum 0.9, wd 1e-4, batch 256, 200 epochs with ×0.1 at 120 and
160. Augmentation as the Ring code's IR baseline: RRC(0.2–1), grayscale 0.2, colour jitter 0.4 (always), flip.
`:runlocal` keeps the architecture, trains on 256 Fashion-MNIST images with a bank of 256.
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.data import recipes


def get_config(arg=None):
    c = configs.base_config()
    c.method = "ir"
    c.method_config = ml_collections.ConfigDict(
        dict(temperature=0.07, num_negatives=4096, bank_size=1_281_167, bank_momentum=0.5)
    )
    c.data.name = "imagenet2012"
    c.data.image_size = 224
    c.model.backbone = "resnet50"
    c.model.stem = "imagenet"
    c.model.projector = ml_collections.ConfigDict(
        dict(
            hidden_dims=(),
            out_dim=128,
            hidden_bias=True,
            last_bias=True,
            last_bn=False,
            use_bn=False,
        )
    )
    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.base_lr = 0.03
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "step"
    c.optim.decay_epochs = (120.0, 160.0)
    c.knn.every_steps = 25_000
    c.knn.num_train = 100_000
    if configs.is_runlocal(arg):
        configs.use_local_data(c)
        c.method_config.bank_size = 256
        c.method_config.num_negatives = 64
    c.data.views = ("ir",)
    c.data.recipes = ml_collections.ConfigDict(
        {"ir": recipes.instance_discrimination(c.data.image_size)}
    )
    configs.finalize(c, arg)
    if configs.is_runlocal(arg):
        c.model.width = 1.0  # keep the real ResNet-50
    return c
