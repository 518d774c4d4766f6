"""Linear probe of a pretrained encoder:
`python -m ssl_jax.main --config=configs/linear_probe.py:PRESET --config.init=W --workdir=OUT`.

The backbone is frozen (eval-mode BatchNorm); the dataset, the image size and the normalisation come
from the pretraining run (`config.init`) unless `--config.data.<key>=` overrides them. Presets
(`get_config('moco')`, ..., combinable with `runlocal`: 'fast,runlocal'); none named is 'auto':
`probe` holds 'moco' and `probe_small_data` 'fast', and the job takes the second for a run
pretrained on one of `SMALL_DATA` (its first lines say which; override the block it takes):

- 'moco': MoCo / JCL / InfoMin ImageNet protocol — `main_lincls.py` of facebookresearch/moco
  (He et al. 2020; Chen et al. 2020, MoCo v2), used unchanged by JCL (Cai et al. 2021) and InfoMin
  (Tian et al. 2020): SGD lr 30, momentum 0.9, weight decay 0, 100 epochs, lr × 0.1 at epochs 60
  and 80, batch 256, RandomResizedCrop(224) + horizontal flip, eval resize 256 / centre crop 224,
  `fc` init N(0, 0.01²), bias 0.
- 'sce': SCE ImageNet protocol (Denize et al. 2023, "Similarity Contrastive Estimation"): 90 epochs,
  batch 1024, lr 0.1 × batch / 256, cosine decay, SGD momentum 0.9, crop + flip. Weight decay is
  not given by the protocol description; 0 here.
- 'ring': Ring protocol (Wu et al. 2021, "Conditional Negative Sampling for Contrastive Learning of
  Visual Representations"): logistic regression on the backbone features (cached eval-view
  features, no augmentation), SGD lr 0.01, momentum 0.9, 100 epochs, no decay. The batch size is
  not given there; 256 here.
- 'fast': cached features (small data), full-batch L-BFGS multinomial logistic regression on
  standardised features (`probe.solver='lbfgs'`, the default job's probe table) or closed-form
  ridge regression onto one-hot labels (`'ridge'`); the L2 penalty is picked on a held-out 10% of
  the training features from `probe.l2_grid` (empty: `probe_fit.L2_GRIDS[solver]`).

`probe.features` (every preset): what is probed. 'pooled' (default): the last stage's global average
pool (512-d for a ResNet-18), the papers' protocol. 'stages': every stage's pool, concatenated
(960-d for a ResNet-18). The default job's probe table (`configs/sce_fashion_mnist.py`) probes
'stages', so its pretrained row is this job's 'fast' preset with `--config.probe.features=stages`
(same solver, l2 grid, held-out split and 60k / 10k images); 'pooled' gives a lower number there.
The job's first and last lines and `probe_result.json` name the features.

`runlocal`: a few epochs on the first 512 training and 1000 test images (CPU smoke run).
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.evaluate import jobs

PRESETS = ("moco", "sce", "ring", "fast")


def _optim(**kw) -> ml_collections.ConfigDict:
    o = dict(
        name="sgd",
        base_lr=30.0,
        lr_scaling="none",
        momentum=0.9,
        nesterov=False,
        weight_decay=0.0,
        schedule="step",
        warmup_epochs=0.0,
        decay_epochs=(60.0, 80.0),
        decay_factor=0.1,
        final_lr=0.0,
        trust_coefficient=1e-3,
        exclude_1d=False,
    )
    o.update(kw)
    return ml_collections.ConfigDict(o)


# Pretraining data sets on which the default ('auto') takes 'fast': tens of thousands of small
# images, whose cached features fit in memory; MoCo's SGD protocol (lr 30, for a ResNet-50 on
# ImageNet) diverges on a small encoder there. Any other (ImageNet, an image folder) takes 'moco'.
SMALL_DATA = ("fashion_mnist", "color_fashion_mnist", "cifar10", "cifar100", "stl10")


def get_config(arg=None):
    a = common.parse_arg(arg, **dict.fromkeys(PRESETS, False))
    chosen = [p for p in PRESETS if getattr(a, p)]
    if len(chosen) > 1:
        raise configs.ConfigError(
            f"config argument {arg!r}: give at most one preset of {list(PRESETS)}, optionally "
            "with 'runlocal' (e.g. 'fast,runlocal')"
        )
    c = jobs.job_config("linear_probe")
    if chosen:
        c.probe = probe_block(chosen[0], a.runlocal)
    else:  # 'auto': the job takes `probe_small_data` when the run was pretrained on SMALL_DATA
        c.probe = probe_block("moco", a.runlocal)
        c.probe.preset = "auto"
        c.probe_small_data = probe_block("fast", a.runlocal)
        c.small_data = SMALL_DATA
    return c


def probe_block(preset: str, runlocal: bool) -> ml_collections.ConfigDict:
    """`config.probe` of one preset."""
    p = ml_collections.ConfigDict()
    p.preset = preset
    p.protocol = "sgd"  # 'sgd' | 'fast'
    p.input = "images"  # sgd: 'images' (augmented, frozen forward per step) | 'features' (cached)
    p.features = "pooled"  # 'pooled' (last stage: the papers' protocol) | 'stages' (every stage's)
    p.num_epochs = 100.0
    p.batch_size = 256
    p.optim = _optim()
    p.crop_scale = (0.08, 1.0)  # RandomResizedCrop scale (torchvision default)
    p.flip = True
    p.head_init_std = 0.01
    p.eval_every_epochs = 10
    p.eval_batch_size = 256
    p.num_train = -1  # >0: only the first N training images
    p.num_test = -1  # >0: only the first N test images
    # fast: the default job's probe-table solver and grid ('lbfgs' logistic regression | 'ridge'
    # closed form; an empty grid is the solver's own, `probe_fit.L2_GRIDS`)
    probe_table = configs.base_config().evals.probe_table
    p.solver = probe_table.solver
    p.l2_grid = tuple(probe_table.l2_grid)
    p.iterations = probe_table.iterations  # fast, 'lbfgs': at most this many L-BFGS iterations

    if preset == "sce":
        p.num_epochs = 90.0
        p.batch_size = 1024
        p.optim = _optim(base_lr=0.1, lr_scaling="linear", schedule="cosine", decay_epochs=())
    elif preset == "ring":
        p.input = "features"
        p.optim = _optim(base_lr=0.01, schedule="constant", decay_epochs=())
    elif preset == "fast":
        p.protocol = "fast"
        p.input = "features"
        p.eval_batch_size = 512

    if runlocal:
        p.num_train = 512
        p.num_test = 1000
        p.eval_batch_size = 128
        p.eval_every_epochs = 1
        if p.protocol == "sgd":
            p.batch_size = 64
            p.num_epochs = 2.0
            p.optim.decay_epochs = tuple(e * 2.0 / 100.0 for e in p.optim.decay_epochs)
    return p
