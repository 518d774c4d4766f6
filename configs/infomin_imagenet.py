"""InfoMin on ImageNet: PyContrast's `--method InfoMin` preset (Tian et al. 2020; PyContrast `pycontrast/options/base_options.py` L19).

PyContrast (`options/base_options.py`, `train_options.py`, `datasets/util.py`, `docs/RUN.md`,
`README.md`): preset `['RGB', jigsaw=True, mem='moco', aug='D', head='mlp', nce_t=0.15]`. ResNet-50
with the 'mlp' head Linear(2048, 2048) → ReLU → Linear(→128) (and the same as the jigsaw head's
per-patch `fc1`), MoCo queue of 65536 keys (`--nce_k`), τ 0.15, jigsaw weight β 0.5 (`--beta`), EMA
α 0.999 after the optimiser step, shuffle-BN within the 8 GPUs × 32 images of the DDP run; batch
256, SGD lr 0.03 momentum 0.9 wd 1e-4, cosine per epoch to lr·0.1³ (`--cosine`) over epochs 1..E
(`main_contrast.py` L67–69, `learning/base_trainer.py` L66–72; `optim.epoch_offset` 1), 200 epochs
(README: 70.1 % linear top-1; 800 epochs: 73.0 %; 100: 67.4 %). Views: two crops of aug "D"
(`recipes.infomin`: RRC (0.2, 1), flip, jitter (0.8, 0.8, 0.8, 0.2) p 0.8, blur 23 taps p 0.5,
RandAugment n2 m10 mstd0.5, grayscale p 0.2) and the jigsaw mosaic (`recipes.jigsaw`: RRC 255 scale
(0.6, 1), flip, 3 × 3 cells of 85 px, a 64-px patch in each). `get_config('batch=512')` applies
PyContrast's rule for batches above 256 (`options/train_options.py` L43–57): a warm-up of 5 epochs
(10 beyond 500 epochs), per iteration from 0.01 to the cosine's value at the last warm-up epoch,
the cosine kept over all E epochs (`base_trainer.py` L81–89; `optim.warmup_form` 'pycontrast'). The
lr is not scaled with the batch (PyContrast has no such rule; `docs/RUN.md` L29 sets 0.06 by hand
for batch 512): `get_config('batch=512,lr=0.06')`.
`jigsaw=False` drops the jigsaw branch. Evaluation and kNN monitor as `mocov2_imagenet.py`.
`:runlocal` keeps the ResNet-50 and trains on 256 color_fashion_mnist images with a queue of 256.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg, batch=256, lr=0.03, jigsaw=True)
    c = configs.base_config()
    c.method = "infomin"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.15,
            queue_size=65536,
            jigsaw=True,
            jigsaw_weight=0.5,
            query_bn_group_size=32,  # DDP: 8 GPUs × 32 images, per-GPU BN
            key_bn_group_size=32,
            shuffle_bn=True,
        )
    )
    c.ema.base = 0.999
    c.ema.schedule = "constant"

    common.imagenet_data(c)
    if a.runlocal:  # ImageNet is not on CPU CI
        common.color_fashion_mnist_data(c, size=32)
        c.method_config.queue_size = 256
    common.infomin_views(c, jigsaw=a.jigsaw)

    c.model.backbone = "resnet50"
    c.model.dtype = "auto"  # bfloat16 compute on GPU/TPU, float32 on CPU
    c.model.stem = "imagenet"
    c.model.projector = head_config((2048,), 128, use_bn=False)  # PyContrast 'mlp' head

    c.global_batch_size = a.batch
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = a.lr
    c.optim.momentum = 0.9
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "cosine"
    c.optim.schedule_unit = "epoch"
    c.optim.final_lr = a.lr * 0.1**3  # η_min = lr·0.1³
    c.optim.epoch_offset = 1.0  # cos(π e/E) for epochs e = 1..E
    if a.batch > 256:  # PyContrast: `--warm` switched on for batches above 256
        c.optim.warmup_epochs = 10.0 if c.num_epochs > 500 else 5.0
        c.optim.warmup_from = 0.01
        c.optim.warmup_form = "pycontrast"  # to the cosine's value; the cosine over all epochs
    c.evals.knn.update(every_steps=25_000, num_train=100_000)
    if a.runlocal:
        common.runlocal(c)
        c.model.width = 1.0  # keep the real ResNet-50
    return c
