"""InterCLR on STL-10 (the 100,000 `unlabelled` images, 96 px). No official small-data config.

`interclr_cifar10.py`, built by its `get_config` (MoCo v2 part as `mocov2_cifar10.py`, the
official inter-branch settings), on STL-10:
96-px views (RRC of the MoCo v2 recipe at 96 px, blur off as on CIFAR), the CIFAR stem, normalisation and splits as
`sce_stl10.py` (the SCE code's STL-10 datamodule, `common.stl10_unlabelled_data`). C, K and the pool scaled
from ImageNet by the bank size (`common.interclr_scaled`): 780 clusters, 1,280 negatives from a pool of
9,984 (~10 %). Bank 100,000 × 128 float32 = 51 MB. kNN monitor every 4000 steps (ours). `:runlocal`
trains a few steps on 256 Fashion-MNIST images with 8 clusters, 32 negatives from a pool of 64.
"""

import ml_collections

from configs import common, interclr_cifar10
from ssl_jax.data import recipes


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = interclr_cifar10.get_config(arg)
    if not a.runlocal:
        # 100,000 rows: 780 clusters, K 1280, pool 9984
        c.method_config.update(common.interclr_branch(100_000))
        common.stl10_unlabelled_data(c)
        c.data.recipes = ml_collections.ConfigDict({"mocov2": recipes.mocov2(96, blur=False)})
        c.evals.knn.every_steps = 4000
    return c
