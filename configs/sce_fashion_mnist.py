"""SCE on Fashion-MNIST: the small default SCE job that runs on 2 CPU cores in minutes.

Not from the paper: `sce_cifar10.py`, built by its `get_config`, for SCE's CIFAR-10 method settings
(official code: asymmetric loss with the weak
view → target, τ 0.1, τ_m 0.05, λ 0.5, shuffle-BN as SplitBN with 8 groups on the target
trunk's BN only, as the official code), SCE's CIFAR projector layout (no hidden bias, BN, ReLU,
last bias), SGD wd 5e-4) on 28-px grayscale images (`channels=1`), sized for the default job's
CPU budget (≤ 15 min on 2 cores): ResNet-18 at width 1/2 with the `stride2` stem (a 3×3
stride-2 conv, no max-pool: 28 px → 14 px before stage 1, stages at 14, 7, 4 and 2 px),
projector 256 → 256 → 128, batch 64, 2400 steps (~2.6 epochs), lr 0.06 (0.24 × 64/256) without
warm-up, m 0.99, queue 4096.
Views: view 0 = `recipes.weak(28)` (crop + flip, the target's), view 1 =
`recipes.fashion_mnist_default(28)` (crop, flip, brightness/contrast jitter p 0.8: the strong view
without the colour ops grayscale images cannot have); `:crop_min=X` sets both views' smallest crop
area (default 0.2). The kNN monitor (k 200, τ 0.07, 10k / 10k images) runs at steps 600, 1200,
1800 and 2400; after pretraining, the table: logistic regression (L-BFGS, l2 chosen on a held-out
10%) and weighted kNN of the pretrained encoder, its random init and raw pixels on 60k / 10k
images, on the last stage's pooled output (the papers' protocol).
The stem and width are the CPU speedrun's (grid `cpu_speedrun`): its figures against the previous
default (full width, ImageNet stem) are in docs/experiments/default_job.md and
results/cpu_speedrun.md.
`ressl_fashion_mnist.py` is the ReSSL baseline with these numbers.
"""

import ml_collections

from configs import common, sce_cifar10
from ssl_jax.data import recipes


def get_config(arg=None):
    # crop_min: the random resized crops' smallest area fraction, both views (a speedrun lever)
    a = common.parse_arg(arg, crop_min=0.2)
    c = sce_cifar10.get_config(common.parent_arg(arg, "crop_min", "runlocal"))
    c.method_config.key_bn_group_size = 8  # 8 groups at batch 64

    common.fashion_mnist_data(c, channels=1)
    c.data.update(train_subset=0, shuffle_buffer=60_000)
    c.data.views = ("weak", "strong")
    c.data.recipes = ml_collections.ConfigDict(
        {
            "weak": recipes.weak(28, scale=(a.crop_min, 1.0)),
            "strong": recipes.fashion_mnist_default(28, scale=(a.crop_min, 1.0)),
        }
    )

    c.model.stem = "stride2"  # 28 → 14 px before stage 1 (2 px at the last stage)
    c.model.width = 0.5
    c.model.projector.hidden_dims = (256,)

    c.global_batch_size = 64  # more updates per image seen: the budget is CPU time, not epochs
    c.num_epochs = 3.0
    c.total_steps = 2400  # ~2.6 epochs at batch 64: the default job's budget on 2 CPU cores
    c.optim.base_lr = 0.24  # × 64/256 (linear scaling) = 0.06, SCE's CIFAR lr
    c.optim.warmup_epochs = 0.0
    c.optim.warmup_form = "linear"  # the base default (no warm-up here)

    c.log_every_steps = 20
    c.checkpoint_every_steps = 500  # a ~35 MB state: every ~2.5 min
    # the kNN monitor 4 times during the run (steps 600, 1200, 1800, 2400) on a subset, so the
    # curves show accuracy rising: 10k train images as the memory, 10k test images as the queries
    c.evals.knn.update(every_steps=600, num_train=10_000, num_test=10_000, batch_size=512)
    # then the table: logistic regression (L-BFGS) and weighted kNN (k 200, τ 0.07) of the
    # pretrained encoder, its random init and raw pixels on all 60k / 10k images, the encoders on
    # the last stage's pooled output (the papers' protocol); eval batches of 512 (a multiple of 8
    # devices)
    c.evals.probe_table.update(every_steps=0, num_train=-1, batch_size=512, features="pooled")
    if a.runlocal:
        c.method_config.queue_size = 256  # divides the 32 keys of a runlocal step
        common.runlocal(c)
    return c
