"""IR (memory-bank instance discrimination) on CIFAR-10, as the Ring/CNCE code's `NCE` baseline.

Ring code (mhw32/contrastive-ring-public): ResNet-18 + MLP 512-512-128, bank of all 50,000 images, K 4096
uniform negatives with the own entry as positive, τ 0.07, SGD lr 0.03 mom 0.9 wd 1e-4, batch 256, 200 epochs
with ×0.1 at epochs 136 and 166. Differences, each a config value: the Ring code replaces bank rows (m = 0)
while Wu et al. and CMC use m = 0.5 (our default here: set `method_config.bank_momentum=0.0` for the Ring
code); the Ring code upsamples CIFAR to 224 px with the ImageNet stem, we train at 32 px with the CIFAR stem
(set `model.stem`/`data.image_size` to reproduce the code).
Built by `ir_imagenet.build` on the data, encoder and SGD of `mocov2_cifar10.setting` (the same
numbers).
"""

from ssl_jax import configs


def get_config(arg=None):
    return configs.sibling(__file__, "ir_imagenet").build(
        arg, "mocov2_cifar10", bank_size=50_000, decay_epochs=(136.0, 166.0)
    )
