"""InterCLR on Fashion-MNIST: the method on the data this machine has, at `mocov2_fashion_mnist.py`'s
budget (compared with MoCo v2 by `experiments/compare_methods.py`).

Not from the paper. The MoCo v2 part repeats `mocov2_fashion_mnist.py`'s numbers (ResNet-18 CIFAR stem at width
1/4, MLP 256-128, batch 256, 3 epochs, SGD lr 0.06 wd 5e-4 cosine, m 0.99, queue 4096, τ 0.2, key BN
in 8 shuffled groups of 32, the crop+flip+jitter recipe). The inter branch has the official code's
settings (online labels, centroids every 10 steps, clusters < 20
refilled, semi-hard sampling, MarginNCE m −0.5, τ 0.2, weights 0.75/0.25, bank momentum 1.0) with
the bank-relative numbers scaled from ImageNet by the bank size (`common.interclr_scaled`: the same
ratios of clusters, negatives and pool to rows): 470 clusters (~128 images each, as 10,000 on
ImageNet), 768 negatives from a pool of 6,016 (~10 %). Bank 60,000 × 128 float32 = 31 MB.
`:subset=N` pretrains on the first N training images (bank N rows, C/K/pool scaled to N the same
way; `subset=10000`: 80 clusters, 128 negatives, pool 1,024 — the evidence runs of docs/experiments/interclr.md, where 600
steps of 64 visit each image ~4 times, so the bank and the online labels are refreshed).
`:runlocal` trains 6 steps on 256 images with 8 clusters, 32 negatives from a pool of 64.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg, subset=0)
    rows = a.subset or 60_000
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
            bank_size=rows,
            bank_momentum=1.0,
            labels="online",
            centroid_every_steps=10,
            min_cluster_size=20,
            kmeans_iters=20,
            **common.interclr_scaled(rows),  # 60,000 rows: 470 clusters, K 768, pool 6016
        )
    )
    c.ema.base = 0.99

    common.fashion_mnist_data(c, channels=1)
    c.data.train_subset = a.subset
    c.data.shuffle_buffer = 60_000
    c.data.views = ("fashion", "fashion")
    c.data.recipes = ml_collections.ConfigDict({"fashion": recipes.fashion_mnist_default(28)})

    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.width = 0.25
    c.model.projector = head_config((256,), 128, use_bn=False)  # MLP 256-128

    c.global_batch_size = 256
    c.num_epochs = 3.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.06
    c.optim.weight_decay = 5e-4
    c.optim.schedule = "cosine"
    c.optim.warmup_epochs = 0.0

    c.log_every_steps = 20
    c.checkpoint_every_steps = 200
    c.evals.knn.update(every_steps=-1, num_train=10_000, batch_size=512)
    c.evals.probe_table.update(every_steps=0, num_train=-1, batch_size=512)
    if a.runlocal:
        common.interclr_runlocal(c)
        common.runlocal(c)
    return c
