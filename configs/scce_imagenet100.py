"""SCE on ImageNet-100, the paper's ablation setting (Sec. 4.1; 83.37% top-1, Tab. 3/6).

No official run config exists for it (CEA-LIST/SCE ships only an ImageNet-100 datamodule); every
number is the paper's Sec. 4.1 text unless marked:
- ResNet-50, 200 epochs, batch 512 (8 GPUs), memory buffer 65536.
- Projector "2 fully connected layers, hidden 4096, output 256": 2048 → 4096 (BN, ReLU) → 256; the
  BN and the biases follow ReSSL's projector (our reading, the paper does not say). No predictor.
- Asymmetric loss ("we do not symmetrize the loss by default"): view 0 = weak (crop + flip) →
  target, view 1 = strong (MoCo v2 / ReSSL strong: jitter 0.4/0.4/0.4/0.1 p 0.8, grayscale 0.2,
  blur p 0.5) → online (Tab. 2; Tab. 4 "strong / weak / no"). Random resized crop scale (0.2, 1) as
  ReSSL and the SCE code (the paper does not give it).
- τ 0.1, τ_m 0.07 (best of Tab. 6; Tab. 1 used 0.05), λ 0.5.
- SGD momentum 0.9, wd 1e-4, lr 0.3 × batch/256 (linear scaling rule) = 0.6, 5 linear warm-up
  epochs then cosine; momentum of the target 0.996 → 1 with a cosine.
- Shuffle-BN (the SCE code's default `shuffle_bn: True`, 8 GPUs): 8 key BN groups (our reading).
- Colour ops on the accelerator (`data.device_ops=True`, as the SCE code's ImageNet GPU pipelines;
  `False` runs them in tf.data with the same distributions). Data: `data.name='image_folder'` with
  `data.data_dir` = a folder with `train/` and `val/` holding the 100 classes of CMC's list (paper
  ref. [47], in its supplementary), one sub-folder per class. `dataset='imagenet2012'` gives the
  paper's Sec. 4.2 ImageNet comparison setting (Tab. 5): the same with lr 0.5 and a 3-layer
  projector 2048-2048-256 with BN on every layer (`ressl_imagenet.py` uses it). `:runlocal` trains
  a few steps on Fashion-MNIST (3 channels) at width 1/8 with a 256-entry queue.
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def build(arg=None, method="sce", dataset="imagenet100"):
    c = configs.base_config()
    c.method = method
    c.method_config = configs.sibling(__file__, "scce_cifar10").method_config(
        method,
        queue_size=65536,
        temperature_m=0.07,
        symmetric=False,
        shuffle_bn=True,
        key_bn_groups=8,
    )
    c.data.image_size = 224
    c.data.eval_crop_fraction = 0.875
    c.data.mean, c.data.std = configs.IMAGENET_MEAN, configs.IMAGENET_STD
    c.data.shuffle_buffer = 50_000
    c.data.device_ops = True  # colour ops in the jitted step (the SCE code's GPU pipelines)
    c.model.backbone = "resnet50"
    c.model.stem = "imagenet"
    c.model.predictor.enabled = False
    c.global_batch_size = 512
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.3
    c.optim.lr_scaling = "linear"
    c.optim.momentum = 0.9
    c.optim.weight_decay = 1e-4
    c.optim.exclude_1d = False
    c.optim.schedule = "cosine"
    c.optim.warmup_epochs = 5.0
    c.ema.base = 0.996
    c.ema.schedule = "cosine"
    c.knn.every_steps = 5000
    if dataset == "imagenet100":
        c.data.name = "image_folder"
        c.data.data_dir = ""  # the ImageNet-100 folder (train/, val/)
        c.data.eval_test_split = "val"
        c.model.projector = head_config((4096,), 256)
    elif dataset == "imagenet2012":
        c.data.name = "imagenet2012"
        c.data.eval_test_split = "validation"
        c.knn.num_train = 100_000
        c.optim.base_lr = 0.5
        c.model.projector = head_config(
            (2048, 2048), 256, hidden_bias=False, last_bias=False, last_bn=True
        )
    else:
        raise configs.ConfigError(f"dataset {dataset!r}: allowed 'imagenet100', 'imagenet2012'")
    if configs.is_runlocal(arg):
        configs.use_local_data(c)
        c.method_config.queue_size = 256  # divides the 32 keys of a runlocal step
        c.optim.warmup_epochs = 0.25  # 2 of the 6 runlocal steps
    size = c.data.image_size
    c.data.views = ("weak", "strong")
    c.data.recipes = ml_collections.ConfigDict(
        {"weak": recipes.weak(size), "strong": recipes.strong(size)}
    )
    return configs.finalize(c, arg)


def get_config(arg=None):
    return build(arg, "sce")
