"""InterCLR on CIFAR-10. No official small-data config exists (the code ships ImageNet only).

The MoCo v2 part is `mocov2_cifar10.py`, built by its `get_config` (ResNet-18 CIFAR stem, 32 px, MLP 512-512-128, τ 0.2,
m 0.999 before the keys, queue 4096, key BN in 8 shuffled groups of 32, SGD lr 0.03 wd 1e-4 cosine,
batch 256, 200 epochs, MoCo v2 augmentation without blur). The inter branch has the official code's
settings (`common.interclr_branch`) with C, K and the pool scaled from ImageNet by the bank size
(`common.interclr_scaled`): 390 clusters, 640 negatives from a pool of 4,992 (~10 %) over the 50,000
training images. Bank 50,000 × 128 float32 = 26 MB. `:runlocal` trains a few steps on 256
Fashion-MNIST images (CIFAR is not on CPU CI) with 8 clusters, 32 negatives from a pool of 64.
"""

from configs import common, mocov2_cifar10


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = mocov2_cifar10.get_config(arg)
    # 50,000 rows: 390 clusters, K 640, pool 4992
    return common.interclr_from_mocov2(c, 50_000, runlocal=a.runlocal)
