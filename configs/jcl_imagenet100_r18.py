"""JCL ablation setting: ResNet-18 on ImageNet-100 (Cai et al., NeurIPS 2020, Sec. 4.4 and
supplementary D/E).

From the paper: the 100-class ImageNet subset of CMC (Tian et al.; class list in supplementary D),
ResNet-18, 100 epochs, batch N = 128, lr 0.1 with cosine decay; M' = 9, λ 4.0, τ 0.2 (supplementary
E, the setting of the ablations and of the Fig. 3 visualisation). Not stated in the text (its Table
3 did not survive extraction): the rest "strictly follow[s] MoCo v2" (Sec. 4.1), so m 0.999, queue
65536, SGD momentum 0.9, wd 1e-4, MLP head 512-512-128 (hidden = feature width as MoCo v2's
`--mlp`), MoCo v2 augmentation at 224 px, per-GPU BN with shuffle-BN (our reading: 4 GPUs × 32, so BN
groups of 32 queries and M'·32 keys), and the code's
per-epoch λ ramp (`jcl_imagenet_paper.py`'s numbers but for what the ablation setting changes).
kNN monitor every 10,000 steps on the first 50,000 training images (ours).

Data: an image folder with one sub-folder per class, `train/` and `val/` (as CMC's ImageNet-100):
`--config.data.data_dir=/path/to/imagenet100`. `:runlocal` keeps the ResNet-18 at full width but
trains a few steps on 256 Fashion-MNIST images.
`:keys=N` sets M' (and so the views): `--config=configs/jcl_imagenet100_r18.py:keys=5`.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg, keys=9)  # M' = 9 (paper supplementary E)
    c = configs.base_config()
    c.method = "jcl"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=65536,
            # MoCo v2's per-GPU BN (our reading: 4 GPUs × 32 queries, M'·32 keys after the
            # shuffle per BN group; the paper does not give its GPU count)
            shuffle_bn=True,
            query_bn_group_size=32,
            key_bn_group_size=32 * a.keys,
            num_keys=a.keys,
            lam=4.0,
            lam_schedule="linear_epoch",
        )
    )
    c.ema.base = 0.999
    c.ema.schedule = "constant"

    common.imagenet_data(c)
    common.image_folder_data(c, test_split="val")  # the ImageNet-100 folder (train/, val/)
    if a.runlocal:  # ImageNet is not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.queue_size = 256
    c.data.views = common.jcl_views("mocov2", a.keys)
    c.data.recipes = ml_collections.ConfigDict({"mocov2": recipes.mocov2(c.data.image_size)})
    common.colour_ops_on_device(c)  # the host cannot feed an accelerator otherwise

    c.model.backbone = "resnet18"
    c.model.stem = "imagenet"
    c.model.projector = head_config((512,), 128, use_bn=False)  # hidden = feature width, as `--mlp`

    c.global_batch_size = 128
    c.num_epochs = 100.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.1
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "cosine"
    c.optim.schedule_unit = "epoch"  # official adjust_learning_rate: cosine once per epoch
    c.evals.knn.update(every_steps=10_000, num_train=50_000)
    if a.runlocal:
        common.runlocal(c)
        c.model.width = 1.0  # the real ResNet-18
        c.model.projector.hidden_dims = (64,)
    return c
