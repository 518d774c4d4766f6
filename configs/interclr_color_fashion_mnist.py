"""InterCLR on color_fashion_mnist at 32 px, on RGB: the method at `mocov2_color_fashion_mnist.py`'s
budget.

Not from the paper. The MoCo v2 part repeats `mocov2_color_fashion_mnist.py`'s numbers (ResNet-18
CIFAR stem at width 1/2, MLP 512-128, batch 256, 3 epochs, SGD lr 0.06 wd 5e-4 cosine, m 0.99, queue
4096, τ 0.2, key BN in 8 shuffled groups of 32, the final probe table), as `interclr_fashion_mnist.py`
repeats `mocov2_fashion_mnist.py`'s. The augmentation is MoCo v2's at 32 px without the blur
(`recipes.mocov2(32, blur=False)`: RRC (0.2, 1), jitter 0.4/0.4/0.4/0.1 p 0.8, grayscale p 0.2,
flip), the recipe of `interclr_cifar10.py` and of the baseline, in place of the fashion config's
`fashion_mnist_default` (brightness/contrast jitter only, for grey images). The inter branch has
the official code's settings, as `interclr_fashion_mnist.py` (online labels, centroids every 10
steps, clusters < 20 refilled, semi-hard sampling, MarginNCE m −0.5, τ 0.2, weights 0.75/0.25, bank
momentum 1.0) with the bank-relative numbers scaled from ImageNet by the bank size
(`common.interclr_scaled`: the same ratios of clusters, negatives and pool to rows): 470 clusters
(~128 images each, as 10,000 on ImageNet), 768 negatives from a pool of 6,016 (~10 %). Bank 60,000
× 128 float32 = 31 MB.
`:subset=N` pretrains on the first N training images (bank N rows, C/K/pool scaled to N the same
way; `subset=10000`: 80 clusters, 128 negatives, pool 1,024).
`:runlocal` trains 6 steps on 256 images with 8 clusters, 32 negatives from a pool of 64.
"""

from configs import common, mocov2_color_fashion_mnist


def get_config(arg=None):
    a = common.parse_arg(arg, subset=0)
    c = mocov2_color_fashion_mnist.get_config(common.parent_arg(arg, "subset"))
    c.method = "interclr"
    # 60,000 rows: 470 clusters, K 768, pool 6016
    c.method_config.update(common.interclr_branch(a.subset or 60_000))
    if a.runlocal:
        common.interclr_runlocal(c)
    else:
        c.data.train_subset = a.subset
    return c
