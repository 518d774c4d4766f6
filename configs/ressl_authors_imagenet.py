"""ReSSL on ImageNet as its authors ran it (ReSSL paper Tab. 1, 200 epochs, 1 crop: 69.9% in the
authors' README).

Every number is the authors' code: KyleZheng1997/ReSSL, now mingkai-zheng/ReSSL, files as stored
at commits 277ab05 (`ressl.py`), 0c53001 (`network/ressl.py`) and 4b92011 (the others); `L` = line.
- Method `ressl_authors` (`methods/ressl_authors.py`): the key encoder's EMA BEFORE the keys
  (`network/ressl.py` L121 `_momentum_update_key_encoder()` inside `forward`, then the keys L124-125),
  m 0.999 constant (L12 `m=0.999`, L43). For SCE's reproduction of ReSSL (EMA after the optimiser,
  m 0.996 → 1, batch 512, lr 0.5 × 512/256, 3-layer BN projector) see `ressl_imagenet.py`.
- Loss: τ 0.1 (`ressl.py` L68 `logitsq / 0.1`), τ_m 0.04 (L18 `--t 0.04`, `script/train.sh` L3).
- Queue 131072 = 65536·2 of 512-d keys (`network/ressl.py` L12 `dim=512, K=65536*2`), FIFO of the
  gathered keys (L53).
- ResNet-50 (torchvision layout, no fc; `network/resnet.py`), projector 2048 → 4096 (bias, ReLU, no
  BN) → 512 (bias, no BN) (`network/backbone.py` L20 `hidden_dim=4096, dim=512`, L24;
  `network/head.py` L24-30 `ProjectionHead`: Linear, ReLU, Linear); no predictor.
- Views (`data/augmentation.py`): view 0 = `target_aug` (L39-44: RRC 224 scale (0.2, 1), flip) →
  key encoder; view 1 = `moco_aug` (L27-37: RRC (0.2, 1), jitter 0.4/0.4/0.4/0.1 p 0.8, grayscale
  p 0.2, PIL blur σ∈[0.1, 2] p 0.5, flip: MoCo v2's augmentation, `recipes.mocov2`) → online
  (`ressl.py` L113 `aug=[moco_aug, target_aug]`, img1 → `im_q`, img2 → `im_k`). Colour ops run on
  the accelerator here (`data.device_ops=True`, same distributions; the authors' are PIL on CPU;
  the blur is a 23-tap kernel here, PIL's radius-σ filter there).
- Batch 256 = 32 per GPU (`ressl.py` L93) × 8 GPUs on 1 node (`script/train.sh` L3
  `command.sh ressl-200 8 1`), 200 epochs (L16).
- SGD lr 0.05 with no batch scaling (L17, L95 `base_lr = args.lr`), momentum 0.9, wd 1e-4, BN and
  bias parameters without weight decay (L104-109; `optim.exclude_1d=True` excludes every 1-D
  parameter — the authors' name test `'bn' in n or 'bias' in n` misses the downsample BN weights
  `downsample.1.weight`, which do get weight decay there), 5 linear warm-up epochs from 0
  (`lr·t/W`, L24, L33) then cosine to 0 over the remaining steps (L36), set every iteration (L58).
- kNN monitor every 5000 steps on the first 100,000 training images (ours).
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
    # BN (authors): DDP on 8 GPUs × 32 images, no SyncBN (plain BatchNorm2d; `ressl.py` L93, L98):
    #   per-GPU statistics over 32 images in BOTH encoders; the key batch is shuffled across the 8
    #   GPUs before the key encoder and un-shuffled after (shuffle-BN, `network/ressl.py` L62-87,
    #   L124-126); the projector has no BN: groups of 32 images in both encoders, keys shuffled.
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.1,
            temperature_m=0.04,
            queue_size=131072,
            symmetric=False,  # view 0 (weak) → key encoder, view 1 (strong) → online
            shuffle_bn=True,
            query_bn_group_size=32,
            key_bn_group_size=32,
        )
    )
    c.ema.base = 0.999
    c.ema.schedule = "constant"

    common.imagenet_data(c)
    c.data.device_ops = True  # colour ops in the jitted step (same distributions as tf.data)
    if a.runlocal:  # not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.queue_size = 256  # divides the 32 keys of a runlocal step
    size = c.data.image_size
    c.data.views = ("weak", "strong")
    c.data.recipes = ml_collections.ConfigDict(
        {"weak": recipes.weak(size), "strong": recipes.mocov2(size)}
    )

    c.model.backbone = "resnet50"
    c.model.dtype = "auto"  # bfloat16 compute on GPU/TPU, float32 on CPU
    c.model.stem = "imagenet"
    c.model.projector = head_config((4096,), 512, use_bn=False)  # Linear-ReLU-Linear, biases
    c.model.predictor.enabled = False

    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.05
    c.optim.lr_scaling = "none"
    c.optim.momentum = 0.9
    c.optim.nesterov = False
    c.optim.weight_decay = 1e-4
    c.optim.exclude_1d = True
    c.optim.schedule = "cosine"
    c.optim.warmup_epochs = 5.0
    c.optim.warmup_form = "linear"  # lr·t/W from t = 0
    c.optim.schedule_unit = "step"
    c.evals.knn.update(every_steps=5000, num_train=100_000)
    if a.runlocal:
        c.optim.warmup_epochs = 0.25  # 2 of the 6 runlocal steps
        common.runlocal(c)
    return c
