"""JCL on ImageNet with the paper's numbers (Cai et al., NeurIPS 2020, Sec. 4.1, supplementary C).

From the paper: ResNet-50 with a two-layer MLP head (d = 128), M' = 5 positive keys, τ 0.2, λ 4.0,
batch N = 512, lr 0.06 with cosine decay, 200 epochs, SGD momentum 0.9, wd 1e-4, queue 65536 of mean
keys, m 0.999, shuffle-BN over the N × M' concatenated keys, MoCo v2 augmentation ("other settings
strictly follow MoCo v2": the rest is `mocov2_imagenet.py`'s numbers). The paper states no λ
schedule; it motivates λ by the statistics being "less informative in the beginning of the
training", and the only released code ramps it per epoch, so the ramp λ·(epoch+1)/epochs is kept
here too (`--config.method_config.lam_schedule=constant` for a fixed λ). The released script's
numbers (M' = 4, λ 2.0, batch 256, lr 0.03) are `jcl_imagenet.py`. kNN monitor every 12,500 steps
(ours: the 25,000 of `mocov2_imagenet.py` at twice the batch).
`:runlocal` keeps the ResNet-50 but trains a few steps on 256 Fashion-MNIST images.
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_imagenet_paper.py:keys=8,runlocal`.
"""

import os
import sys

import ml_collections

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:  # loaded by path (`--config=configs/X.py`) from any directory
    sys.path.insert(0, _ROOT)

from configs import common  # noqa: E402
from ssl_jax import configs  # noqa: E402
from ssl_jax.data import recipes  # noqa: E402
from ssl_jax.models import head_config  # noqa: E402


def get_config(arg=None):
    a = common.parse_arg(arg, keys=5)  # M' = 5 (paper Sec. 4.1)
    c = configs.base_config()
    c.method = "jcl"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=65536,
            # MoCo v2's per-GPU BN on 8 GPUs (our reading: 512 / 8 = 64 queries and M'·64 keys
            # after the shuffle per BN group; the paper does not give its GPU count)
            shuffle_bn=True,
            query_bn_group_size=64,
            key_bn_group_size=64 * a.keys,
            num_keys=a.keys,
            lam=4.0,
            lam_schedule="linear_epoch",
        )
    )
    c.ema.base = 0.999
    c.ema.schedule = "constant"

    common.imagenet_data(c)
    if a.runlocal:  # ImageNet is not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.queue_size = 256
    c.data.views = common.jcl_views("mocov2", a.keys)
    c.data.recipes = ml_collections.ConfigDict({"mocov2": recipes.mocov2(c.data.image_size)})
    common.colour_ops_on_device(c)  # the host cannot feed an accelerator otherwise

    c.model.backbone = "resnet50"
    c.model.stem = "imagenet"
    c.model.projector = head_config((2048,), 128, use_bn=False)  # MLP 2048-2048-128

    c.global_batch_size = 512
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.06
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "cosine"
    c.optim.schedule_unit = "epoch"  # official adjust_learning_rate: cosine once per epoch
    c.evals.knn.update(every_steps=12_500, num_train=100_000)
    if a.runlocal:
        common.runlocal(c)
        c.model.width = 1.0  # the real ResNet-50
        c.model.projector.hidden_dims = (64,)
    return c
