"""CMCv2 on ImageNet: PyContrast's `--method CMCv2` preset (PyContrast `pycontrast/options/base_options.py` L18).

`cmc_pycontrast_imagenet.py` (PyContrast's `--method CMC`), built by its `get_config`, with the
method, heads, queues and augmentation of the preset. PyContrast (`options/base_options.py`,
`train_options.py`, `docs/RUN.md`): YDbDr (`RGB2YDbDr` +
Normalize), each crop split into Y (1 channel) and DbDr (2 channels), two ResNet-50s at width 0.5
(`networks/build_backbone.py` `CMCSingleHead._parse_width`; 1024-d each, `model.width` 1.0 halved)
whose stem has `max(int(64·width), 64)` = 64 channels (`networks/resnet.py` L139, L151–153;
`model.stem_width` 64, as CMC's `models/resnet.py` L111–115), with 'mlp' heads Linear(1024, 1024) →
ReLU → Linear(→128), MoCo queues of 65536 keys per view (`--nce_k`), τ 0.2 (`--nce_t`), cross-view
InfoNCE (q1 against k2 and queue2, q2 against k1 and queue1), EMA α 0.999 after the optimiser step,
shuffle-BN within the 8 GPUs × 32 images of the DDP run; batch 256, SGD lr 0.03 momentum 0.9 wd
1e-4, cosine per epoch to lr·0.1³ (`--cosine`) over epochs 1..E (`main_contrast.py` L67–69,
`learning/base_trainer.py` L66–72: the first epoch already decayed, the last at lr·0.1³;
`optim.epoch_offset` 1), 200 epochs. Augmentation "E" (`recipes.cmcv2_e`): RRC scale (0.2, 1) (MoCo
queue), flip, colour jitter (0.4, 0.4, 0.4, 0.1) with p 0.8, Gaussian blur (kernel 23, σ 0.1–2)
with p 0.5, RandAugment n2 m10 mstd0.5 over PyContrast's CMC list (AutoContrast, Identity, Rotate,
Sharpness, ShearX/Y, TranslateX/YRel), no grayscale, then YDbDr. Ours: kNN monitor as
`mocov2_imagenet.py`. `:runlocal` keeps the two ResNet-50s, trains on 256 color_fashion_mnist
images with queues of 256 keys.
"""

import ml_collections

from configs import cmc_pycontrast_imagenet, common
from ssl_jax.data import recipes


def get_config(arg=None):
    a = common.parse_arg(arg, space="ydbdr")
    c = cmc_pycontrast_imagenet.get_config(common.parent_arg(arg, "runlocal"))
    c.method = "cmcv2"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=65536,
            query_bn_group_size=32,  # DDP: 8 GPUs × 32 images, per-GPU BN
            key_bn_group_size=32,
            shuffle_bn=True,
        )
    )
    c.ema.update(base=0.999, schedule="constant")
    c.data.train_subset = 0  # no bank to split over the devices: every image
    if a.runlocal:  # ImageNet is not on CPU CI
        common.color_fashion_mnist_data(c, size=32)
        c.method_config.queue_size = 256
    size = c.data.image_size
    c.data.views = ("cmcv2", "cmcv2")
    c.data.recipes = ml_collections.ConfigDict(
        {"cmcv2": (*recipes.cmcv2_e(size), {"op": "color_space", "space": a.space})}
    )
    c.model.projector.hidden_dims = (1024,)  # PyContrast 'mlp' head
    if a.runlocal:
        common.runlocal(c)
        c.model.width = 1.0  # keep the real ResNet-50s at width 0.5
    return c
