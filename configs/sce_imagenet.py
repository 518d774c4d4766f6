"""SCE on ImageNet, the paper's Sec. 4.3 setting (72.7% top-1 at 200 epochs, Tab. 7).

Official code: CEA-LIST/SCE `run/pretrain/sce/resnet50/resnet50_imagenet.yaml` (+ the model, head,
optimiser and transform yamls it names); the paper agrees on every number unless said otherwise.
- ResNet-50; projector `projector_resnet50_mlp3_bn3`: 2048 → 2048 → 2048 → 256, BN + ReLU on the
  hidden layers, no biases, BN without affine on the output; predictor
  `predictor_resnet50_mlp2_bn1`: 256 → 4096 (BN, ReLU) → 256, no biases (the MoCo v3 heads, paper:
  "same projector and predictor as [MoCo v3]"). Keys come from the momentum trunk + projector
  (never the predictor).
- Symmetric loss (`sym: True`) over the 2 global crops, view 0 = strong-α, view 1 = strong-β (paper
  Tab. 2 / Sec. 4.3; RRC 224 scale (0.2, 1) on the host, `two_crops_cpu.yaml`; jitter
  0.4/0.4/0.2/0.1 p 0.8, grayscale 0.2, blur 23×23 σ∈[0.1, 2] p 1.0 (α) / 0.1 (β), solarize p 0.2
  (β) in `two_crops_gpu_mocov3.yaml`). That yaml has no horizontal flip on view 1: kept as the
  code's behaviour (`recipes.strong_beta(224, flip=False)`); the paper's Tab. 2 flips every view
  (`recipes.strong_beta(224)`).
- τ 0.1, τ_m 0.07, λ 0.5, queue 65536 (2 × 4096 keys per step), SyncBN everywhere (`sync_batchnorm:
  True`, `shuffle_bn: False`).
- Momentum 0.99 → 1 with a per-step cosine (`scheduler_momentum: cosine`), EMA after the optimiser
  step.
- LARS (MoCo v3 style: 1-D parameters get neither weight decay nor adaptation), trust coefficient
  1e-3, momentum 0.9, lr 0.3 × batch/256 = 4.8, 10 warm-up epochs then cosine per step, wd 1e-6
  (paper: 1.5e-6 for 1000 epochs; lr 0.5 for 100 epochs), batch 4096, 200 epochs. Crops and flips
  run in tf.data, the colour ops (jitter, grayscale, blur, solarize) on the accelerator inside the
  jitted step (`data.device_ops=True`) with per-example keys, as the official pipeline does them on
  the GPU with Kornia; `data.device_ops=False` runs them on the host (same distributions,
  tests/data/device/test_device_colour_sce.py). `sce_imagenet_multicrop.py` adds the 4 local crops.
  kNN monitor every 5000 steps on the first 100,000 training images (ours). `:runlocal` keeps the
  layer layout at width 1/8 (heads of 64 hidden / 32 output units) and trains a few steps on
  Fashion-MNIST (3 channels) at 28 px with a 256-entry queue and the blur kernel at 10% of the side.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = configs.base_config()
    c.method = "sce"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.1,
            temperature_m=0.07,
            coeff=0.5,
            queue_size=65536,
            symmetric=True,
            num_global_crops=2,
            shuffle_bn=False,  # SyncBN everywhere (official `sync_batchnorm: True`)
            query_bn_group_size=0,
            key_bn_group_size=0,
        )
    )
    c.ema.base = 0.99
    c.ema.schedule = "cosine"

    common.imagenet_data(c)
    c.data.device_ops = True  # colour ops in the jitted step, as the official Kornia GPU pipeline
    if a.runlocal:  # ImageNet is not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.queue_size = 256  # divides the 2 × 32 keys of a runlocal step
    size = c.data.image_size
    kernel = 0 if a.runlocal else 23  # Kornia GaussianBlur 23×23 on every crop in the official code
    views = {
        "strong_alpha": recipes.strong_alpha(size, kernel_size=kernel),
        # the 2-crop transform (two_crops_gpu_mocov3.yaml) does not flip view 1
        "strong_beta": recipes.strong_beta(size, kernel_size=kernel, flip=False),
    }
    c.data.views = tuple(views)
    c.data.recipes = ml_collections.ConfigDict(views)

    c.model.backbone = "resnet50"
    c.model.dtype = "auto"  # bfloat16 compute on GPU/TPU, float32 on CPU
    c.model.stem = "imagenet"
    c.model.projector = head_config(
        (2048, 2048), 256, hidden_bias=False, last_bias=False, last_bn=True
    )
    c.model.predictor = head_config(
        (4096,), 256, hidden_bias=False, last_bias=False, last_bn=False, enabled=True
    )

    c.global_batch_size = 4096
    c.num_epochs = 200.0
    c.optim.name = "lars"
    c.optim.base_lr = 0.3
    c.optim.lr_scaling = "linear"
    c.optim.momentum = 0.9
    c.optim.weight_decay = 1e-6
    c.optim.trust_coefficient = 1e-3
    c.optim.exclude_1d = True
    c.optim.schedule = "cosine"
    c.optim.warmup_epochs = 10.0
    c.optim.warmup_form = "sce"  # official scheduler: peak·t/(W−1), the peak at t = W−1
    c.evals.knn.update(every_steps=5000, num_train=100_000)
    if a.runlocal:
        c.optim.warmup_epochs = 0.25  # 2 of the 6 runlocal steps
        common.runlocal(c)
    return c
