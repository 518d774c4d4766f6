"""ReSSL on CIFAR-10 as its authors ran it (ReSSL paper, small-dataset setting, ResNet-18).

The authors' repository as stored here (mingkai-zheng/ReSSL, formerly KyleZheng1997/ReSSL) holds
only the ImageNet code (`ressl_authors_imagenet.py`); its small-dataset release is in the index only
through forks of it (same `util/`, `network/ressl.py`, `dataset/data.py` layout). The numbers below
are what those forks' unmodified parts agree on, NOT checked against the authors' own file:
- Method `ressl_authors` (`methods/ressl_authors.py`): the EMA of the key encoder (trunk and head)
  BEFORE the query and the keys (`network/ressl.py` `forward`: `_momentum_update_key_encoder()`
  first), m 0.99 constant (`ReSSL(dim=128, K=4096, m=0.99, bn_splits=8)`, `--m 0.99`).
- Loss τ 0.1, τ_m 0.04 (`F.softmax(logits_k / 0.04) … F.log_softmax(logits_q / 0.1)`), queue
  4096 of 128-d keys (`--k 4096`, `dim=128`).
- ResNet-18 with the CIFAR stem (3×3 conv, stride 1, no max-pool: `ModelBaseMoCo`, the MoCo CIFAR
  demo's `ModelBase`), projector `MoCoHead(input_dim=512)`: 512 → 2048 (bias, ReLU, no BN) → 128
  (bias), the head's default hidden width 2048; no predictor.
- Views (`dataset/data.py`): `get_weak_augment` (RRC 32 scale (0.2, 1), flip) → key encoder;
  `get_contrastive_augment` (RRC (0.2, 1), flip, jitter 0.4/0.4/0.4/0.1 p 0.8, grayscale p 0.2,
  PIL blur σ∈[0.1, 2] p 0.5; `recipes.cifar_strong`) → online; the MoCo/SCE CIFAR-10 mean/std.
- Batch 256, SGD lr 0.06 (no scaling), momentum 0.9, wd 5e-4 on every parameter
  (`torch.optim.SGD(model.parameters(), …, weight_decay=5e-4)`), 5 linear warm-up epochs from 0
  (`lr·t/W`) then cosine to 0, set every iteration (`adjust_learning_rate`, `warm_up = 5`).
- 200 epochs: the paper's small-dataset budget as we read it (the forks' `--epochs` defaults
  differ: 25, 200, 800). Unverified.
For SCE's reproduction of ReSSL on CIFAR-10 (EMA after the optimiser, 512-512-128 BN projector,
τ_m 0.04 in SCE's setting) see `ressl_cifar10.py`. kNN monitor every 2000 steps (ours).
`:runlocal` trains a few steps on Fashion-MNIST (3 channels) with a 256-entry queue.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = configs.base_config()
    c.method = "ressl_authors"  # ReSSL with the EMA before the keys
    # BN (authors): 1 GPU, batch 256; SplitBatchNorm(num_splits=8) in BOTH ResNet-18s
    #   (`ModelBaseMoCo(bn_splits=8)` for the online and the key trunk): 8 groups of 32 images in
    #   each encoder, as 8 GPUs; the key batch is permuted on the GPU before the key trunk and
    #   un-permuted after (`_batch_shuffle_single_gpu`); the projector has no BN: groups of 32
    #   images in both trunks, the keys shuffled, the BatchNorm2d layers only.
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.1,
            temperature_m=0.04,
            queue_size=4096,
            symmetric=False,  # view 0 (weak) → key encoder, view 1 (strong) → online
            shuffle_bn=True,
            query_bn_group_size=32,
            key_bn_group_size=32,
            bn_group_scope="backbone",
        )
    )
    c.ema.base = 0.99
    c.ema.schedule = "constant"

    common.cifar10_data(c)
    if a.runlocal:  # not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.queue_size = 256  # divides the 32 keys of a runlocal step
    size = c.data.image_size
    c.data.views = ("weak", "strong")
    c.data.recipes = ml_collections.ConfigDict(
        {"weak": recipes.weak(size), "strong": recipes.cifar_strong(size)}
    )

    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.projector = head_config((2048,), 128, use_bn=False)  # Linear-ReLU-Linear, biases
    c.model.predictor.enabled = False

    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.06
    c.optim.lr_scaling = "none"
    c.optim.momentum = 0.9
    c.optim.nesterov = False
    c.optim.weight_decay = 5e-4
    c.optim.exclude_1d = False
    c.optim.schedule = "cosine"
    c.optim.warmup_epochs = 5.0
    c.optim.warmup_form = "linear"  # lr·t/W from t = 0
    c.optim.schedule_unit = "step"
    c.evals.knn.every_steps = 2000
    if a.runlocal:
        c.optim.warmup_epochs = 0.25  # 2 of the 6 runlocal steps
        common.runlocal(c)
    return c
