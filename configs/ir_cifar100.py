"""IR (the Ring/CNCE code's `NCE` baseline) on CIFAR-100: the code's numbers.

ResNet-18 with the ImageNet stem + MLP 512→512→128, batch 256, SGD lr 0.03 momentum 0.9 wd 1e-4, 200
epochs with ×0.1 at int(0.68·200) = 136 and int(0.83·200) = 166, τ 0.07, k − 1 = 4095 draws from a
bank of all 50,000 training images with m 0 (rows replaced), initialised uniform in ±1/√(128/3) then
L2-normalised (`method_config.bank_init`, `src/objectives/memory.py` L17–24). Input as the code's
default transforms: images upsampled to 224 px (RRC 0.2–1, grayscale 0.2, colour jitter 0.4 always,
flip, ImageNet mean/std; eval Resize 256 / CenterCrop 224); `:mocov2_32x32` the code's 32-px MoCo v2
transforms, blur p 0.5 included (`common.ring_code_transforms`). No ring: the baseline of
`iring_cifar100.py` (same numbers, uniform negatives). Sources: mhw32/contrastive-ring-public
@fb3e1c2 (`config/pretrain/{nce,mocov2}/*.json`, `src/systems/systems.py`,
`src/objectives/{instdisc,moco,memory}.py`, `src/utils/policy.py`, `src/datasets/datasets.py`).
`:runlocal` trains a few steps on Fashion-MNIST (3 channels) with a bank/queue of 256.
"""

import ml_collections

from configs import common
from ssl_jax import configs


def get_config(arg=None):
    a = common.parse_arg(arg, mocov2_32x32=False)
    c = configs.base_config()
    c.method = "ir"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.07,
            num_negatives=4095,
            bank_size=50000,
            bank_momentum=0.0,
            bank_init="uniform",
        )
    )

    common.cifar10_data(c)
    c.data.name = "cifar100"
    if a.runlocal:  # not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.update(bank_size=256, num_negatives=64)
    common.ring_code_transforms(c, "ring", 1, a.mocov2_32x32)

    common.ring_code_training(c)  # ResNet-18, SGD 0.03, 200 epochs, ×0.1 at 136 and 166
    if a.runlocal:
        common.runlocal(c)
    return c
