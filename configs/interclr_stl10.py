"""InterCLR on STL-10 (the 100,000 `unlabelled` images, 96 px). No official small-data config.

`interclr_cifar10.py`'s numbers (MoCo v2 part as `mocov2_cifar10.py`, the official inter-branch settings)
on STL-10:
96-px views (RRC of the MoCo v2 recipe at 96 px, blur off as on CIFAR), the CIFAR stem, normalisation as
`scce_stl10.py` (the SCE code's STL-10 entry), evaluation on `train` / `test`. C, K and the pool scaled
from ImageNet by the bank size (`common.interclr_scaled`): 780 clusters, 1,280 negatives from a pool of
9,984 (~10 %). Bank 100,000 × 128 float32 = 51 MB. kNN monitor every 4000 steps (ours). `:runlocal`
trains a few steps on 256 Fashion-MNIST images with 8 clusters, 32 negatives from a pool of 64.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config

STL10_STD = (0.2471, 0.2435, 0.2616)  # SCE code, datamodule/stl10.py normalisation entry


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
            bank_size=100_000,
            bank_momentum=1.0,
            labels="online",
            centroid_every_steps=10,
            min_cluster_size=20,
            kmeans_iters=20,
            **common.interclr_scaled(100_000),  # 780 clusters, K 1280, pool 9984
        )
    )
    c.ema.base = 0.999

    common.cifar10_data(c)
    c.data.name = "stl10"
    c.data.train_split = "unlabelled"
    c.data.eval_train_split = "train"
    c.data.eval_test_split = "test"
    c.data.image_size = 96
    c.data.std = STL10_STD  # the mean stays CIFAR-10's, as the SCE code's STL-10 entry
    c.data.cache = False  # 100k × 96 × 96 × 3 decoded would take 2.8 GB of host memory
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
    c.evals.knn.every_steps = 4000
    if a.runlocal:
        common.runlocal(c)
    return c
