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
  i) pair (2 × 5 = 10 terms) and the queue receives the 2 × 4096 global keys per step. `:runlocal`:
  Fashion-MNIST at 28 px, local crops 24/20/16/12 px, width 1/8, queue 256.
"""

from ssl_jax import configs


def build(arg=None, method="sce"):
    return configs.sibling(__file__, "scce_imagenet").build(arg, method, multicrop=True)


def get_config(arg=None):
    return build(arg, "sce")
