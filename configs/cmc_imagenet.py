"""CMC (Tian et al., ECCV 2020) on ImageNet, as the official `train_CMC.py` (HobbitLong/CMC) trains
its ResNet-50 "v1" (HobbitLong/CMC `train_CMC.py`; `models/resnet.py` L318 `MyResNetsCMC('resnet50v1')`).

Code: Lab (`RGB2Lab`, `--view Lab`), one crop per image split into L (1 channel) and ab (2 channels),
two ResNet-50s at width 0.5 (`resnet50v1`: `model.width` 1.0 halved) with linear heads to 128 and L2
normalisation; the stem is 64 channels at every width (`models/resnet.py` L111–115: `conv1` to 64,
`bn1` of 64; `model.stem_width` 64); a memory bank per view of all training images (`NCEAverage`,
uniform ±1/√(128/3) init), K 16384 uniform negatives (`--nce_k`), τ 0.07 (`--nce_t`), bank momentum
0.5 (`--nce_m`), the NCE loss with Z fixed at the first step (`NCECriterion`; `loss='softmax'` = the
code's `--softmax`), RRC scale (0.08, 1) (`--crop_low 0.08` for ResNets), flip, no colour jitter;
batch 128, SGD lr 0.03 momentum 0.9 wd 1e-4, 240 epochs, lr ×0.1 at epochs 120, 160 and 200
(`--lr_decay_epochs 120,160,200`, applied per epoch). README: K 4096 for the released ResNet weights,
YCbCr (`:space=ycbcr`) 0.5–1 % better than Lab. BN: the model is an `nn.DataParallel`
(`models/resnet.py` L329) run on 4 GPUs at batch 128 (README L83–85: "requires at least 4 GPUs",
`CUDA_VISIBLE_DEVICES=0,1,2,3 … --batch_size 128`), so each GPU's BN sees 32 images:
`query_bn_group_size` 32. Ours: the bank and the training set are the first 1,281,152 images
(`IMAGENET_BANK_ROWS`) so the bank splits evenly over up to 128 devices; kNN monitor as
`ir_imagenet.py`. `:runlocal` keeps the two ResNet-50s at width 0.5, trains on 256
color_fashion_mnist images with a bank of 256 and 64 negatives.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg, space="lab")
    c = configs.base_config()
    c.method = "cmc"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.07,
            num_negatives=16384,
            bank_size=common.IMAGENET_BANK_ROWS,
            bank_momentum=0.5,
            loss="nce",
            query_bn_group_size=32,  # nn.DataParallel on 4 GPUs × 32 images
        )
    )

    common.imagenet_data(c)
    c.data.train_subset = common.IMAGENET_BANK_ROWS  # the bank splits evenly over ≤ 128 devices
    if a.runlocal:  # ImageNet is not on CPU CI
        common.color_fashion_mnist_data(c, size=32)
        c.method_config.update(bank_size=256, num_negatives=64)
    c.data.views = ("cmc",)  # one crop; the model splits it into L and ab
    c.data.recipes = ml_collections.ConfigDict(
        {"cmc": recipes.cmc(c.data.image_size, a.space, scale=(0.08, 1.0))}
    )

    c.model.backbone = "resnet50"
    c.model.dtype = "auto"  # bfloat16 compute on GPU/TPU, float32 on CPU
    c.model.stem = "imagenet"
    c.model.width = 1.0  # resnet50v1: two encoders of width 0.5
    c.model.stem_width = 64  # CMC's ResNets keep a 64-channel stem at every width
    c.model.projector = head_config((), 128, use_bn=False)  # linear head to 128

    c.global_batch_size = 128
    c.num_epochs = 240.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.03
    c.optim.momentum = 0.9
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "step"
    c.optim.schedule_unit = "epoch"  # adjust_learning_rate once per epoch
    c.optim.decay_epochs = (120.0, 160.0, 200.0)
    c.optim.decay_factor = 0.1
    c.evals.knn.update(every_steps=25_000, num_train=100_000)
    if a.runlocal:
        common.runlocal(c)
        c.model.width = 1.0  # keep the real resnet50v1
    return c
