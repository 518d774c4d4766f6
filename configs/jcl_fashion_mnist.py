"""JCL on Fashion-MNIST: the small job to compare with `mocov2_fashion_mnist.py` on 2 CPU cores.

Not from a paper: everything but the method is `mocov2_fashion_mnist.py` (ResNet-18, CIFAR stem,
width 1/4, 28-px grayscale, MLP 256-128, batch 256, 3 epochs, SGD lr 0.06 wd 5e-4 cosine, m 0.99,
queue 4096, shuffle-BN with 8 groups, the crop+flip+jitter recipe), so the two runs differ only in
the loss and in JCL's extra key crops (tests check that the configs differ in nothing else). JCL's
own numbers are the released code's: M' = 4 keys, λ 2.0 ramped per epoch as λ·(epoch+1)/epochs, τ
0.2, mean keys in the queue. Pretraining is followed by the linear-probe table (pretrained vs random
init vs raw pixels).
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_fashion_mnist.py:keys=8,runlocal`.
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.methods import jcl


def get_config(arg=None):
    keys, arg = jcl.split_config_arg(arg)  # `:keys=N` sets M' (and so the views)
    c = configs.base_config()
    c.method = "jcl"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=4096,
            num_keys=4,
            lam=2.0,
            lam_schedule="linear_epoch",
            shuffle_bn=True,
            key_bn_groups=8,
        )
    )
    if keys:
        c.method_config.num_keys = keys
    configs.use_local_data(c, channels=1)
    c.data.train_subset = 0
    c.data.shuffle_buffer = 60_000
    c.data.views = ("fashion",) * (c.method_config.num_keys + 1)
    c.data.recipes = ml_collections.ConfigDict({"fashion": recipes.fashion_mnist_default(28)})
    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.width = 0.25
    c.model.projector = ml_collections.ConfigDict(
        dict(
            hidden_dims=(256,),
            out_dim=128,
            hidden_bias=True,
            last_bias=True,
            last_bn=False,
            use_bn=False,
        )
    )
    c.global_batch_size = 256
    c.num_epochs = 3.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.06
    c.optim.weight_decay = 5e-4
    c.optim.schedule = "cosine"
    c.optim.warmup_epochs = 0.0
    c.ema.base = 0.99
    c.log_every_steps = 20
    c.checkpoint_every_steps = 200
    c.knn.every_steps = 0  # the final probe table replaces the monitor on the default job
    c.knn.num_train = 10_000
    c.knn.batch_size = 500
    c.final_probe_table = True
    c.probe.num_train = -1
    return configs.finalize(c, arg)
