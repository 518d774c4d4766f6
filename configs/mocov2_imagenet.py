"""MoCo v2 on ImageNet (Chen et al. 2020, "Improved Baselines with Momentum Contrastive Learning").

Official facebookresearch/moco `main_moco.py --mlp --moco-t 0.2 --aug-plus --cos`: ResNet-50, 224 px,
batch 256, SGD lr 0.03, momentum 0.9, wd 1e-4, cosine over 200 epochs, queue 65536 × 128, m 0.999
(updated before the keys), MLP head 2048-2048-128, shuffle-BN across GPUs (one BN group per device).
`:runlocal` keeps the ResNet-50 but trains a few steps on 256 Fashion-MNIST images (ImageNet is not on CPU CI).
`ir_imagenet.py` shares `setting` (IR's data, encoder and SGD numbers are these), the
`jcl_imagenet*` configs build on `build`.
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def setting(c):
    """What `ir_imagenet.py` shares: the data, the encoder and head, batch, epochs, SGD lr and wd,
    the kNN monitor (not the method, its views and recipe, the lr schedule or m)."""
    c.data.name = "imagenet2012"
    c.data.eval_test_split = "validation"
    c.data.image_size = 224
    c.data.shuffle_buffer = 50_000
    c.model.backbone = "resnet50"
    c.model.stem = "imagenet"
    c.model.projector = head_config((2048,), 128, use_bn=False)  # MLP 2048-2048-128
    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.03
    c.optim.weight_decay = 1e-4
    c.knn.every_steps = 25_000
    c.knn.num_train = 100_000


def build(arg=None, edit=None):
    """The MoCo v2 config; `edit(config)` (the `jcl_imagenet*` configs: the method, the key views,
    their own numbers) runs before `:runlocal`, and the recipe follows `config.data.image_size`."""
    c = configs.base_config()
    c.method = "mocov2"
    c.method_config = ml_collections.ConfigDict(
        dict(temperature=0.2, queue_size=65536, shuffle_bn=True, key_bn_groups=0)
    )
    setting(c)
    c.optim.schedule = "cosine"
    c.ema.base = 0.999
    c.ema.schedule = "constant"
    c.data.views = ("mocov2", "mocov2")
    if edit is not None:
        edit(c)
    if configs.is_runlocal(arg):
        configs.use_local_data(c)
        c.method_config.queue_size = 256
    c.data.recipes = ml_collections.ConfigDict({"mocov2": recipes.mocov2(c.data.image_size)})
    configs.finalize(c, arg)
    if configs.is_runlocal(arg):
        # keep the real backbone (ResNet-50; jcl_imagenet100_r18.py's ResNet-18) at full width:
        # export and shapes are exercised end to end
        c.model.width = 1.0
        c.model.projector.hidden_dims = (64,)
    return c


def get_config(arg=None):
    return build(arg)
