"""IR (memory-bank instance discrimination) on CIFAR-10, as the Ring/CNCE code's `NCE` baseline.

Ring code (mhw32/contrastive-ring-public): ResNet-18 + MLP 512-512-128, bank of all 50,000 images, K
4096 uniform negatives with the own entry as positive, τ 0.07, SGD lr 0.03 mom 0.9 wd 1e-4, batch
256, 200 epochs with ×0.1 at epochs 136 and 166. Differences, each a config value: the Ring code
replaces bank rows (m = 0) while Wu et al. and CMC use m = 0.5 (our default here: set
`method_config.bank_momentum=0.0` for the Ring code); the Ring code upsamples CIFAR to 224 px with
the ImageNet stem, we train at 32 px with the CIFAR stem (set `model.stem`/`data.image_size` to
reproduce the code). The data, encoder, SGD and kNN monitor (every 2000 steps) are
`mocov2_cifar10.py`'s numbers, the augmentation IR's (`recipes.instance_discrimination`). The bank
starts as the Ring code's: uniform in ±1/√(D/3), then L2-normalised (`method_config.bank_init`;
mhw32/contrastive-ring-public @fb3e1c2 `src/objectives/memory.py` L17–24). `:runlocal` trains a few
steps on Fashion-MNIST with a bank of 256 and 64 negatives.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = configs.base_config()
    c.method = "ir"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.07,
            num_negatives=4096,
            bank_size=50_000,
            bank_momentum=0.5,
            bank_init="uniform",
        )
    )

    common.cifar10_data(c)
    if a.runlocal:  # CIFAR is not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.update(bank_size=256, num_negatives=64)
    c.data.views = ("ir",)
    c.data.recipes = ml_collections.ConfigDict(
        {"ir": recipes.instance_discrimination(c.data.image_size)}
    )

    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.projector = head_config((512,), 128, use_bn=False)  # MLP 512-512-128

    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.base_lr = 0.03
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "step"
    c.optim.decay_epochs = (136.0, 166.0)
    c.evals.knn.every_steps = 2000
    if a.runlocal:
        common.runlocal(c)
    return c
