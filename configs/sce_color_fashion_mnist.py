"""SCE on color_fashion_mnist at 32 px, on RGB: `sce_fashion_mnist.py`'s method with SCE's CIFAR-10
views, at `mocov2_color_fashion_mnist.py`'s budget.

Not an official configuration. `sce_cifar10.py`, built by its `get_config`, at the small budget (`common.small_budget`);
SCE's numbers as `sce_fashion_mnist.py` (SCE's CIFAR-10 method settings, official code CEA-LIST/SCE `resnet18_cifar10.yaml`): asymmetric loss with view 0 (weak) →
target and view 1 (strong) → online, τ 0.1, τ_m 0.05, λ 0.5, queue 4096, momentum 0.99 constant,
shuffle-BN as SplitBN in 8 groups on the target trunk's BN only (32 images each at batch 256, as
`sce_cifar10.py`), projector → 256 (no bias, BN, ReLU) → 128 (bias), SGD lr 0.06 × batch/256
(`linear`), wd 5e-4 on every parameter. Views: the official CIFAR-10 pair
(`two_crops_soft_and_strong_pil_contrastive_cifar10.yaml`, as `sce_cifar10.py`): view 0 =
`recipes.cifar_soft(32)` (RRC (0.2, 1), flip), view 1 = `recipes.cifar_strong(32)` (RRC (0.2, 1),
jitter 0.4/0.4/0.4/0.1 p 0.8, grayscale p 0.2, blur σ∈[0.1, 2] p 0.5 with 13 taps, flip); the
fashion config's strong view (`fashion_mnist_default`: brightness/contrast jitter only) leaves out
the colour ops because its images are grey, which these are not. Data, encoder, batch, schedule
and evals as `mocov2_color_fashion_mnist.py` (ResNet-18 CIFAR stem at width 1/2, batch 256, 3
epochs, cosine, no warm-up; ours), in place of the fashion default job's CPU-budget choices (ImageNet
stem at full width, batch 64, 2,400 steps, kNN monitor, probe on every stage's features).
`ressl_color_fashion_mnist.py` is the ReSSL baseline with these numbers.
`:runlocal`: 6 steps of 32 images at width 1/8 with a 256-entry queue.
"""

import ml_collections

from configs import common, sce_cifar10
from ssl_jax.data import recipes


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = sce_cifar10.get_config(common.parent_arg(arg, "runlocal"))
    common.small_budget(c, color=True)
    c.data.views = ("weak", "strong")
    c.data.recipes = ml_collections.ConfigDict(
        {"weak": recipes.cifar_soft(32), "strong": recipes.cifar_strong(32)}
    )
    c.model.projector.hidden_dims = (256,)
    c.optim.warmup_form = "linear"  # the base default (no warm-up here)
    if a.runlocal:
        c.method_config.queue_size = 256  # divides the 32 keys of a runlocal step
        common.runlocal(c)
    return c
