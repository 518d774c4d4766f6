"""InterCLR on CIFAR-10. No official small-data config exists (the code ships ImageNet only).

The MoCo v2 part repeats `mocov2_cifar10.py`'s numbers (ResNet-18 CIFAR stem, 32 px, MLP 512-512-128, τ 0.2,
m 0.999 before the keys, queue 4096, key BN in 8 shuffled groups of 32, SGD lr 0.03 wd 1e-4 cosine,
batch 256, 200 epochs, MoCo v2 augmentation without blur). The inter branch has the official code's
settings (online labels, centroids every 10 steps, clusters < 20 refilled, semi-hard sampling,
MarginNCE m −0.5, τ 0.2, weights 0.75/0.25, bank momentum 1.0) with C, K and the pool scaled from ImageNet by the bank size
(`common.interclr_scaled`): 390 clusters, 640 negatives from a pool of 4,992 (~10 %) over the 50,000
training images. Bank 50,000 × 128 float32 = 26 MB. `:runlocal` trains a few steps on 256
Fashion-MNIST images (CIFAR is not on CPU CI) with 8 clusters, 32 negatives from a pool of 64.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = configs.base_config()
    c.method = "interclr"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=4096,
            # one accelerator: online BN on the whole batch, keys in 8 shuffled groups
            query_bn_group_size=0,
            key_bn_group_size=32,
            shuffle_bn=True,
            # the inter branch: the official code's settings (mmselfsup 0.x interclr-moco config)
            inter_temperature=0.2,
            margin=-0.5,  # MarginNCE m, subtracted: −0.5 adds 0.5 to the positive cosine
            intra_weight=0.75,
            inter_weight=0.25,
            sampler="semihard",
            bank_size=50_000,
            bank_momentum=1.0,
            labels="online",
            centroid_every_steps=10,
            min_cluster_size=20,
            kmeans_iters=20,
            **common.interclr_scaled(50_000),  # 390 clusters, K 640, pool 4992
        )
    )
    c.ema.base = 0.999

    common.cifar10_data(c)
    if a.runlocal:  # not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        common.interclr_runlocal(c)
    c.data.views = ("mocov2", "mocov2")
    c.data.recipes = ml_collections.ConfigDict(
        {"mocov2": recipes.mocov2(c.data.image_size, blur=False)}
    )

    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.projector = head_config((512,), 128, use_bn=False)  # MLP 512-512-128

    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.base_lr = 0.03
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "cosine"
    c.evals.knn.every_steps = 2000
    if a.runlocal:
        common.runlocal(c)
    return c
