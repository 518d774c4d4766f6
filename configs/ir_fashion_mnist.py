"""IR (memory-bank instance discrimination) on Fashion-MNIST: a small CPU run.

IR's loss and bank (τ 0.07, K 4096 uniform negatives, bank momentum 0.5) with the small encoder and recipe of
`mocov2_fashion_mnist.py`; the bank holds all 60,000 training images.
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.data import recipes


def get_config(arg=None):
    c = configs.base_config()
    c.method = "ir"
    c.method_config = ml_collections.ConfigDict(
        dict(temperature=0.07, num_negatives=4096, bank_size=60_000, bank_momentum=0.5)
    )
    configs.use_local_data(c, channels=1)
    c.data.train_subset = 0
    c.data.shuffle_buffer = 60_000
    c.data.views = ("fashion",)
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
    c.optim.base_lr = 0.06
    c.optim.weight_decay = 5e-4
    c.log_every_steps = 20
    c.checkpoint_every_steps = 200
    c.knn.every_steps = 0
    c.knn.batch_size = 500
    c.final_probe_table = True
    if configs.is_runlocal(arg):
        c.method_config.bank_size = 256
        c.method_config.num_negatives = 64
    return configs.finalize(c, arg)
