"""SCE on ImageNet with multi-crop, the paper's best result (75.4% top-1 at 200 epochs, Tab. 8).

Official code: CEA-LIST/SCE `run/pretrain/sce/resnet50/resnet50_imagenet_multi_crop.yaml`:
everything as `sce_imagenet.py`, built by its `get_config` (ResNet-50, symmetric loss, predictor, LARS lr 0.3 × 4096/256, wd
1e-6, 10 warm-up epochs, τ 0.1, τ_m 0.07, λ 0.5, queue 65536, momentum 0.99 → 1 cosine, 200 epochs)
except:
- 6 views: 2 global crops 224 px scale (0.2, 1) (strong-α, strong-β, both flipped in
  `five_crops_gpu_sce.yaml`) and 4 local crops 192/160/128/96 px with scales (0.172, 0.86),
  (0.143, 0.715), (0.114, 0.571), (0.086, 0.429) (`five_crops_cpu.yaml`, paper Sec. 4.3) with the
  strong-γ augmentation (blur p 0.5, solarize p 0.2, Kornia 23×23 blur kernel at every size);
- projector hidden layers 4096-4096 (`projector.hidden_dims: [4096, 4096]`); float32 compute
  (the base default; `sce_imagenet.py`: bfloat16 on GPU/TPU). Momentum (target)
  features for the 2 global crops only; the loss averages SCE over every (global crop i, crop j ≠
  i) pair (2 × 5 = 10 terms) and the queue receives the 2 × 4096 global keys per step. kNN
  monitor every 5000 steps on the first 100,000 training images (ours). `:runlocal`: Fashion-MNIST
  at 28 px, local crops 24/20/16/12 px, width 1/8, queue 256.
"""

import ml_collections

from configs import common, sce_imagenet
from ssl_jax.data import recipes


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = sce_imagenet.get_config(arg)
    size = c.data.image_size
    kernel = 0 if a.runlocal else 23  # Kornia GaussianBlur 23×23 on every crop in the official code
    views = c.data.recipes.to_dict()
    # the multi-crop transform (five_crops_gpu_sce.yaml) flips view 1
    views["strong_beta"] = recipes.strong_beta(size, kernel_size=kernel, flip=True)
    for local_size, scale in recipes.sce_local_crops(size):
        views[f"local{local_size}"] = recipes.strong_gamma(
            local_size, scale=scale, kernel_size=kernel
        )
    c.data.views = tuple(views)
    c.data.recipes = ml_collections.ConfigDict(views)
    if not a.runlocal:
        c.model.dtype = "float32"  # the base default (`sce_imagenet.py`: 'auto')
        c.model.projector.hidden_dims = (4096, 4096)
    return c
