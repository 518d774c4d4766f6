"""InterCLR on color_fashion_mnist at 32 px, on RGB: the method at `mocov2_color_fashion_mnist.py`'s
budget.

Not from the paper: `interclr_fashion_mnist.py`'s construction on the colour images. The MoCo v2
part is `mocov2_color_fashion_mnist.py`, built by its `get_config` (ResNet-18 CIFAR stem at width
1/2, MLP 512-128, batch 256, 3 epochs, SGD lr 0.06 wd 5e-4 cosine, m 0.99, queue 4096, τ 0.2, key
BN in 8 shuffled groups of 32, MoCo v2's augmentation at 32 px without the blur, the final probe
table); the inter branch and its scaling (`common.interclr_branch`) as `interclr_fashion_mnist.py`:
470 clusters, 768 negatives from a pool of 6,016 for the 60,000 rows; `:subset=N` likewise.
`:runlocal` as `interclr_fashion_mnist.py`'s, on the colour images.
"""

from configs import common, mocov2_color_fashion_mnist


def get_config(arg=None):
    a = common.parse_arg(arg, subset=0)
    c = mocov2_color_fashion_mnist.get_config(common.parent_arg(arg, "subset"))
    # 60,000 rows: 470 clusters, K 768, pool 6016
    rows = a.subset or 60_000
    return common.interclr_from_mocov2(c, rows, runlocal=a.runlocal, train_subset=a.subset)
