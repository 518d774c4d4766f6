"""IR (memory-bank instance discrimination) on CIFAR-10, as the Ring/CNCE code's `NCE` baseline.

Ring code (mhw32/contrastive-ring-public): ResNet-18 + MLP 512-512-128, bank of all 50,000 images, K 4096
uniform negatives with the own entry as positive, τ 0.07, SGD lr 0.03 mom 0.9 wd 1e-4, batch 256, 200 epochs
with ×0.1 at epochs 136 and 166. Differences, each a config value: the Ring code replaces bank rows (m = 0)
while Wu et al. and CMC use m = 0.5 (our default here: set `method_config.bank_momentum=0.0` for the Ring
code); the Ring code upsamples CIFAR to 224 px with the ImageNet stem, we train at 32 px with the CIFAR stem
(set `model.stem`/`data.image_size` to reproduce the code).
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.data import recipes


def get_config(arg=None):
    c = configs.base_config()
    c.method = "ir"
    c.method_config = ml_collections.ConfigDict(
        dict(temperature=0.07, num_negatives=4096, bank_size=50_000, bank_momentum=0.5)
    )
    c.data.name = "cifar10"
    c.data.eval_test_split = "test"
    c.data.image_size = 32
    c.data.eval_crop_fraction = 1.0
    c.data.mean, c.data.std = configs.CIFAR10_MEAN, configs.CIFAR10_STD
    c.data.cache = True
    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.projector = ml_collections.ConfigDict(
        dict(
            hidden_dims=(512,),
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
    c.optim.decay_epochs = (136.0, 166.0)
    c.knn.every_steps = 2000
    if configs.is_runlocal(arg):
        configs.use_local_data(c)
        c.method_config.bank_size = 256
        c.method_config.num_negatives = 64
    c.data.views = ("ir",)
    c.data.recipes = ml_collections.ConfigDict(
        {"ir": recipes.instance_discrimination(c.data.image_size)}
    )
    return configs.finalize(c, arg)
