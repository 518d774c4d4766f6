"""JCL on Fashion-MNIST: the small job to compare with `mocov2_fashion_mnist.py` on 2 CPU cores.

Not from a paper: everything but the method is `mocov2_fashion_mnist.py`'s numbers (ResNet-18, CIFAR
stem, width 1/4, 28-px grayscale, MLP 256-128, batch 256, 3 epochs, SGD lr 0.06 wd 5e-4 cosine, m
0.99, queue 4096, shuffle-BN with 8 groups, the crop+flip+jitter recipe), so the two runs differ
only in the loss and in JCL's extra key crops (tests check that the configs differ in nothing
else). JCL's own numbers are the released code's: M' = 4 keys, λ 2.0 ramped per epoch as
λ·(epoch+1)/epochs, τ 0.2, mean keys in the queue. Pretraining is followed by the linear-probe
table (pretrained vs random init vs raw pixels).
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_fashion_mnist.py:keys=8,runlocal`.
`:runlocal` trains 6 steps of 32 images at width 1/8.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg, keys=4)  # M' = 4: the released script's `k_crops=5`
    c = configs.base_config()
    c.method = "jcl"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=4096,
            # one accelerator: the online network on the whole batch, the M'·256 keys in 8
            # shuffled BN groups (as the official shuffle-BN over 8 GPUs)
            shuffle_bn=True,
            query_bn_group_size=0,
            key_bn_group_size=32 * a.keys,
            num_keys=a.keys,
            lam=2.0,
            lam_schedule="linear_epoch",
        )
    )
    c.ema.base = 0.99

    common.fashion_mnist_data(c, channels=1)
    c.data.train_subset = 0
    c.data.shuffle_buffer = 60_000
    c.data.views = common.jcl_views("fashion", a.keys)
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
