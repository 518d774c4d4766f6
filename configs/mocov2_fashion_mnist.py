"""MoCo v2 on Fashion-MNIST: a small job that runs on 2 CPU cores in minutes (the default job is SCE's,
`scce_fashion_mnist.py`).

Not from a paper: MoCo v2's loss and state (τ 0.2, m 0.99 for the short run, queue 4096, shuffle-BN with
8 groups) on 28-px grayscale images, a ResNet-18 with the CIFAR stem at width 1/4, MLP head 256-128,
batch 256, 3 epochs, SGD lr 0.06 wd 5e-4 cosine, the SimCLR/MoCo crop+flip+jitter recipe without the
colour ops grayscale images cannot have. After pretraining it fits a linear probe on frozen features
of the pretrained encoder, the same encoder at random init and raw pixels (`evals.probe_table`; no
kNN monitor). `ir_fashion_mnist.py` and `jcl_fashion_mnist.py` repeat these numbers for their method
(a test checks that `jcl_fashion_mnist.py` differs from this file only in the method).
`:runlocal` trains 6 steps of 32 images at width 1/8.
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
    c.ema.base = 0.99

    common.fashion_mnist_data(c, channels=1)
    c.data.train_subset = 0
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
    # the final probe table replaces the kNN monitor on the default job
    c.evals.knn.update(every_steps=-1, num_train=10_000, batch_size=512)
    # eval batches of 512 (the figures in docs/ were measured with 500): a multiple of 8 devices
    c.evals.probe_table.update(every_steps=0, num_train=-1, batch_size=512)
    if a.runlocal:
        common.runlocal(c)
    return c
