"""MoCo v2 on Fashion-MNIST: the small default job that runs on 2 CPU cores in minutes.

Not from a paper: MoCo v2's loss and state (τ 0.2, m 0.99 for the short run, shuffle-BN with 8 groups) on
28-px grayscale images, a ResNet-18 with the CIFAR stem at width 1/4, the SimCLR/MoCo crop+flip+jitter
recipe without the colour ops grayscale images cannot have. After pretraining it fits a linear probe on
frozen features of the pretrained encoder, the same encoder at random init and raw pixels.
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.data import recipes


def get_config(arg=None):
    c = configs.base_config()
    c.method = "mocov2"
    c.method_config = ml_collections.ConfigDict(
        dict(temperature=0.2, queue_size=4096, shuffle_bn=True, key_bn_groups=8)
    )
    configs.use_local_data(c, channels=1)
    c.data.train_subset = 0
    c.data.shuffle_buffer = 60_000
    c.data.views = ("fashion", "fashion")
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
