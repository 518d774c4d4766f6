"""MoCo v2 on Fashion-MNIST: a small job that runs on 2 CPU cores in minutes (the default job is SCE's,
`sce_fashion_mnist.py`).

Not from a paper: `mocov2_cifar10.py`, built by its `get_config`, at the small budget
(`common.small_budget`): MoCo v2's loss and state (τ 0.2, m 0.99 for the short run, queue 4096, shuffle-BN with
8 groups) on 28-px grayscale images, a ResNet-18 with the CIFAR stem at width 1/4, MLP head 256-128,
batch 256, 3 epochs, SGD lr 0.06 wd 5e-4 cosine, the SimCLR/MoCo crop+flip+jitter recipe without the
colour ops grayscale images cannot have. After pretraining it fits a linear probe on frozen features
of the pretrained encoder, the same encoder at random init and raw pixels (`evals.probe_table`; no
kNN monitor). `ir_fashion_mnist.py` and `jcl_fashion_mnist.py` repeat these numbers for their method
(a test checks that `jcl_fashion_mnist.py` differs from this file only in the method).
`:runlocal` trains 6 steps of 32 images at width 1/8.
"""

import ml_collections

from configs import common, mocov2_cifar10
from ssl_jax.data import recipes


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = mocov2_cifar10.get_config(common.parent_arg(arg, "runlocal"))
    c.ema.base = 0.99
    common.small_budget(c, color=False)
    c.data.views = ("fashion", "fashion")
    c.data.recipes = ml_collections.ConfigDict({"fashion": recipes.fashion_mnist_default(28)})
    c.model.projector.hidden_dims = (256,)  # MLP 256-128
    c.evals.knn.num_train = 10_000
    if a.runlocal:
        common.runlocal(c)
    return c
