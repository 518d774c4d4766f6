"""MoCo v2 on CIFAR-10: ResNet-18 with the CIFAR stem (3×3 conv, no max-pool), 32 px.

Not an official configuration: MoCo v2's ImageNet hyper-parameters (`main_moco.py --mlp
--moco-t 0.2 --aug-plus --cos`: τ 0.2, m 0.999 updated before the keys, MLP head, SGD lr 0.03
momentum 0.9 wd 1e-4, batch 256, cosine per step, InfoNCE of the query view against the key view
only, not symmetrised) with CIFAR-sized choices of ours: queue 4096, 200 epochs, MLP head
512 → 512 (bias, ReLU, no BN) → 128, the MoCo v2 augmentation at 32 px without the blur.
Shuffle-BN on the key encoder in 8 BN groups of 32 images (`key_bn_group_size=32`, as 8 GPUs on
one device); the query encoder's BN runs over the whole batch (`query_bn_group_size=0`). It is NOT the MoCo CIFAR demo
(facebookresearch/moco `colab/moco_cifar10_demo.ipynb`: τ 0.1, m 0.99, lr 0.06, wd 5e-4, batch 512,
no MLP head, symmetric loss, SplitBN on both encoders). kNN monitor every 2000 steps (ours).
`:runlocal` trains a few steps on Fashion-MNIST (CIFAR is not on CPU CI) with a 256-entry queue.
`ir_cifar10.py` and `jcl_cifar10.py` repeat the data, encoder and SGD numbers.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = configs.base_config()
    c.method = "mocov2"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=4096,
            # one accelerator: the online network on the whole batch, the keys in 8 shuffled BN
            # groups (as MoCo's shuffle-BN over 8 GPUs)
            query_bn_group_size=0,
            key_bn_group_size=32,
            shuffle_bn=True,
        )
    )
    c.ema.base = 0.999

    common.cifar10_data(c)
    if a.runlocal:  # CIFAR is not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.queue_size = 256
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
