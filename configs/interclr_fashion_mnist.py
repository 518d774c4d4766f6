"""InterCLR on Fashion-MNIST: the method on the data this machine has, at `mocov2_fashion_mnist.py`'s
budget (compared with MoCo v2 by `experiments/compare_methods.py`).

Not from the paper. The MoCo v2 part is `mocov2_fashion_mnist.py`, built by its `get_config`
(ResNet-18 CIFAR stem at width 1/4, MLP 256-128, batch 256, 3 epochs, SGD lr 0.06 wd 5e-4 cosine,
m 0.99, queue 4096, τ 0.2, key BN in 8 shuffled groups of 32, the crop+flip+jitter recipe). The
inter branch has the official code's settings (`common.interclr_branch`) with the bank-relative
numbers scaled from ImageNet by the bank size (`common.interclr_scaled`: the same ratios of
clusters, negatives and pool to rows): 470 clusters (~128 images each, as 10,000 on ImageNet), 768
negatives from a pool of 6,016 (~10 %). Bank 60,000 × 128 float32 = 31 MB.
`:subset=N` pretrains on the first N training images (bank N rows, C/K/pool scaled to N the same
way; `subset=10000`: 80 clusters, 128 negatives, pool 1,024 — the evidence runs of
docs/experiments/interclr.md, where 600 steps of 64 visit each image ~4 times, so the bank and the
online labels are refreshed).
`:runlocal` trains 6 steps on 256 images with 8 clusters, 32 negatives from a pool of 64.
"""

from configs import common, mocov2_fashion_mnist


def get_config(arg=None):
    a = common.parse_arg(arg, subset=0)
    c = mocov2_fashion_mnist.get_config(common.parent_arg(arg, "subset"))
    # 60,000 rows: 470 clusters, K 768, pool 6016
    rows = a.subset or 60_000
    return common.interclr_from_mocov2(c, rows, runlocal=a.runlocal, train_subset=a.subset)
