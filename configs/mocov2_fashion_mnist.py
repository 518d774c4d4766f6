"""MoCo v2 on Fashion-MNIST: the small default job that runs on 2 CPU cores in minutes.

Not from a paper: MoCo v2's loss and state (τ 0.2, m 0.99 for the short run, shuffle-BN with 8 groups) on
28-px grayscale images, a ResNet-18 with the CIFAR stem at width 1/4, the SimCLR/MoCo crop+flip+jitter
recipe without the colour ops grayscale images cannot have. After pretraining it fits a linear probe on
frozen features of the pretrained encoder, the same encoder at random init and raw pixels.
`ir_fashion_mnist.py` shares `setting`, `jcl_fashion_mnist.py` builds on `build`.
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def setting(c):
    """What `ir_fashion_mnist.py` shares: the data and its recipe, the encoder and head, batch,
    epochs, SGD, logging and the final probe table (not the method, its views, m or the kNN
    sizes)."""
    configs.use_local_data(c, channels=1)
    c.data.train_subset = 0
    c.data.shuffle_buffer = 60_000
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
    c.knn.every_steps = 0  # the final probe table replaces the monitor on the default job
    c.knn.batch_size = 500
    c.final_probe_table = True


def build(arg=None, edit=None):
    """The MoCo v2 config; `edit(config)` (`jcl_fashion_mnist.py`: the method, the key views, its
    own numbers) runs before `:runlocal`."""
    c = configs.base_config()
    c.method = "mocov2"
    c.method_config = ml_collections.ConfigDict(
        dict(temperature=0.2, queue_size=4096, shuffle_bn=True, key_bn_groups=8)
    )
    setting(c)
    c.data.views = ("fashion", "fashion")
    c.ema.base = 0.99
    c.knn.num_train = 10_000
    c.probe.num_train = -1
    if edit is not None:
        edit(c)
    return configs.finalize(c, arg)


def get_config(arg=None):
    return build(arg)
