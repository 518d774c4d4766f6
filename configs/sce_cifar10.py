"""SCE on CIFAR-10: the official config, CEA-LIST/SCE
`run/pretrain/sce/resnet18/resnet18_cifar10.yaml`.

Every number is the official code's (the paper's small-data details are in its supplementary, which
is not available here):
- ResNet-18 with the CIFAR stem (3×3 conv, stride 1, no max-pool; `small_input_no_fc`), 32 px;
  projector `projector_resnet18_mlp2_bn1`: 512 → 512 (no bias, BN, ReLU) → 128 (bias); no predictor.
- Asymmetric loss (`sym: False`): view 0 = the "soft" view (crop + flip, `recipes.cifar_soft`) goes
  to the target, view 1 = the strong view (`recipes.cifar_strong`: crop, jitter 0.4/0.4/0.4/0.1
  p 0.8, grayscale 0.2, PIL blur σ∈[0.1, 2] p 0.5, flip) to the online network
  (`two_crops_soft_and_strong_pil_contrastive_cifar10.yaml`).
- τ 0.1, τ_m 0.05, λ (coeff) 0.5, queue 4096, momentum 0.99 constant (`scheduler_momentum:
  constant`), EMA after the optimiser step (method default).
- Shuffle-BN simulated on 1 GPU (`simulate_n_devices: 8`): the official code converts only the
  momentum trunk's BatchNorm2d layers to SplitBN with 8 groups (`convert_to_split_batchnorm`) and
  permutes the batch before the momentum forward; the projector's BatchNorm1d and the online
  network use the whole batch. Here: `key_bn_group_size=32` (256 / 8), `bn_group_scope='backbone'`
  (the trunk's BN only), `query_bn_group_size=0`, `shuffle_bn=True` (our groups are contiguous
  slices of the permuted batch, the official ones interleaved: the same random partition).
- SGD lr 0.06 × batch/256 (`scaler: linear`), momentum 0.9, nesterov False, wd 5e-4 on every
  parameter (`exclude_wd_norm/bias: False`), 5 warm-up epochs then cosine per step, batch 256,
  200 epochs. The official run uses AMP; here float32 (set `model.dtype='bfloat16'` for speed).
- Normalisation: the SCE code's CIFAR-10 mean/std (`common.CIFAR10_MEAN/STD`); kNN monitor every 2000 steps (ours).
The paper's variant of the loss (indicator `1_{i≠k}` on the target's self slot) is
`method_config.mask_self=True`; Eq. 9 with free weights is `loss_form='eq9'` (+ `mu`, `eta`).
`ressl_cifar10.py` is the ReSSL baseline with these numbers.
`:runlocal` trains a few steps on Fashion-MNIST (3 channels) with a 256-entry queue and 2 warm-up steps.
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
            temperature_m=0.05,
            coeff=0.5,
            queue_size=4096,
            symmetric=False,  # view 0 (soft) → target, view 1 (strong) → online
            # SplitBN as the official one-GPU run (`simulate_n_devices: 8`): the target trunk's
            # BatchNorm2d in 8 groups, the projector's BN and the online network on the whole batch
            shuffle_bn=True,
            query_bn_group_size=0,
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
    c.data.views = ("soft", "strong")
    c.data.recipes = ml_collections.ConfigDict(
        {"soft": recipes.cifar_soft(size), "strong": recipes.cifar_strong(size)}
    )

    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.projector = head_config((512,), 128, hidden_bias=False)
    c.model.predictor.enabled = False

    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.06
    c.optim.lr_scaling = "linear"
    c.optim.momentum = 0.9
    c.optim.nesterov = False
    c.optim.weight_decay = 5e-4
    c.optim.exclude_1d = False
    c.optim.schedule = "cosine"
    c.optim.warmup_epochs = 5.0
    c.optim.warmup_form = "sce"  # official scheduler: peak·t/(W−1), the peak at t = W−1
    c.evals.knn.every_steps = 2000
    if a.runlocal:
        c.optim.warmup_epochs = 0.25  # 2 of the 6 runlocal steps
        common.runlocal(c)
    return c
