"""CMC on ImageNet as PyContrast's `--method CMC` preset trains it (PyContrast `pycontrast/options/base_options.py` L14).

PyContrast (`options/base_options.py` L14: `['CMC', False, 'bank', 'C', 'linear', 0.07]`; defaults
L36–87; `docs/RUN.md` L9–16 adds `--cosine`): YDbDr (`RGB2YDbDr` + Normalize), one crop per image
(a memory bank: `datasets/util.py` L345–362, no second crop) split into Y (1 channel) and DbDr (2
channels); two ResNet-50s at width 0.5 (`CMCSingleHead._parse_width`) whose stem has
`max(int(64·0.5), 64)` = 64 channels (`networks/resnet.py` L139, L151–153), linear heads to 128,
L2-normalised; a memory bank per view (`CMCMem`, `memory/mem_bank.py` L93–150) initialised
`normalize(randn)`, K 65536 uniform negatives with the own index at column 0 (`--nce_k`), τ 0.07,
bank momentum 0.5 (`--nce_m`), softmax CE on each direction (PyContrast has no NCE loss), loss = L1
+ L2; augmentation "C" (`recipes.cmc_pycontrast`: RRC scale (0.08, 1) for a bank, flip, colour
jitter (0.4, 0.4, 0.4, 0.1) always on, `datasets/util.py` L269–277); DDP on 8 GPUs × 32 images
with per-GPU BN (`query_bn_group_size` 32); batch 256, SGD lr 0.03 momentum 0.9 wd 1e-4, cosine per
epoch to lr·0.1³ over epochs 1..E (`main_contrast.py` L67–69, `learning/base_trainer.py` L66–72;
`optim.epoch_offset` 1), 200 epochs. Ours: the bank and the training set are the first 1,281,152
images (`IMAGENET_BANK_ROWS`) so the bank splits evenly over up to 128 devices; kNN monitor as
`cmc_imagenet.py`. `:runlocal` keeps the two ResNet-50s at width 0.5, trains on 256
color_fashion_mnist images with a bank of 256 and 64 negatives.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg, space="ydbdr")
    c = configs.base_config()
    c.method = "cmc"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.07,
            num_negatives=65536,
            bank_size=common.IMAGENET_BANK_ROWS,
            bank_momentum=0.5,
            loss="softmax",
            bank_init="normal",  # CMCMem: normalize(randn)
            query_bn_group_size=32,  # DDP: 8 GPUs × 32 images, per-GPU BN
        )
    )

    common.imagenet_data(c)
    c.data.train_subset = common.IMAGENET_BANK_ROWS  # the bank splits evenly over ≤ 128 devices
    if a.runlocal:  # ImageNet is not on CPU CI
        common.color_fashion_mnist_data(c, size=32)
        c.method_config.update(bank_size=256, num_negatives=64)
    c.data.views = ("cmc",)  # one crop; the model splits it into Y and DbDr
    c.data.recipes = ml_collections.ConfigDict(
        {"cmc": recipes.cmc_pycontrast(c.data.image_size, a.space, scale=(0.08, 1.0))}
    )

    c.model.backbone = "resnet50"
    c.model.dtype = "auto"  # bfloat16 compute on GPU/TPU, float32 on CPU
    c.model.stem = "imagenet"
    c.model.width = 1.0  # two encoders of width 0.5 (1024-d features each)
    c.model.stem_width = 64  # PyContrast: max(int(64 * 0.5), 64)
    c.model.projector = head_config((), 128, use_bn=False)  # 'linear' head to 128

    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.03
    c.optim.momentum = 0.9
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "cosine"
    c.optim.schedule_unit = "epoch"
    c.optim.final_lr = 0.03 * 0.1**3  # η_min = lr·0.1³
    c.optim.epoch_offset = 1.0  # cos(π e/E) for epochs e = 1..E
    c.evals.knn.update(every_steps=25_000, num_train=100_000)
    if a.runlocal:
        common.runlocal(c)
        c.model.width = 1.0  # keep the real ResNet-50s at width 0.5
    return c
