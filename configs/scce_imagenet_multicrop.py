"""SCE on ImageNet with multi-crop, the paper's best result (75.4% top-1 at 200 epochs, Tab. 8).

Official code: CEA-LIST/SCE `run/pretrain/sce/resnet50/resnet50_imagenet_multi_crop.yaml`:
everything as `scce_imagenet.py` (ResNet-50, symmetric loss, predictor, LARS lr 0.3 × 4096/256, wd
1e-6, 10 warm-up epochs, τ 0.1, τ_m 0.07, λ 0.5, queue 65536, momentum 0.99 → 1 cosine, 200 epochs)
except:
- 6 views: 2 global crops 224 px scale (0.2, 1) (strong-α, strong-β, both flipped in
  `five_crops_gpu_sce.yaml`) and 4 local crops 192/160/128/96 px with scales (0.172, 0.86),
  (0.143, 0.715), (0.114, 0.571), (0.086, 0.429) (`five_crops_cpu.yaml`, paper Sec. 4.3) with the
  strong-γ augmentation (blur p 0.5, solarize p 0.2, Kornia 23×23 blur kernel at every size);
- projector hidden layers 4096-4096 (`projector.hidden_dims: [4096, 4096]`). Momentum (target)
  features for the 2 global crops only; the loss averages SCE over every (global crop i, crop j ≠
  i) pair (2 × 5 = 10 terms) and the queue receives the 2 × 4096 global keys per step. kNN
  monitor every 5000 steps on the first 100,000 training images (ours). `:runlocal`: Fashion-MNIST
  at 28 px, local crops 24/20/16/12 px, width 1/8, queue 256.
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
        # the multi-crop transform (five_crops_gpu_sce.yaml) flips view 1
        "strong_beta": recipes.strong_beta(size, kernel_size=kernel, flip=True),
    }
    for local_size, scale in recipes.sce_local_crops(size):
        views[f"local{local_size}"] = recipes.strong_gamma(
            local_size, scale=scale, kernel_size=kernel
        )
    c.data.views = tuple(views)
    c.data.recipes = ml_collections.ConfigDict(views)

    c.model.backbone = "resnet50"
    c.model.stem = "imagenet"
    c.model.projector = head_config(
        (4096, 4096), 256, hidden_bias=False, last_bias=False, last_bn=True
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
