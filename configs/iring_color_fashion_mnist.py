"""IRing (CNCE, the Ring code's `NCERing`) on color_fashion_mnist at 32 px, on RGB:
`iring_fashion_mnist.py`'s method at `mocov2_color_fashion_mnist.py`'s data, encoder and budget.

Not an official configuration. Everything as `ir_color_fashion_mnist.py` (built by its `get_config`:
IR's τ 0.07, K 4096 draws, bank momentum 0.5, the bank holding all 60,000 training images, as
`ir_fashion_mnist.py`; MoCo v2's augmentation at 32 px without the blur, as every
color_fashion_mnist baseline, `recipes.mocov2(32, blur=False)`: RRC (0.2, 1), jitter
0.4/0.4/0.4/0.1 p 0.8, grayscale p 0.2, flip; encoder, head, batch, SGD and evals as
`mocov2_color_fashion_mnist.py`: ResNet-18 CIFAR stem at width 1/2, MLP 512-128, batch 256, 3
epochs, SGD 0.06 wd 5e-4 cosine, the final probe table); only the method and the ring keys change,
as `iring_fashion_mnist.py` on `ir_fashion_mnist.py`: ring outer 0.1 / inner 0.1, the code's
defaults (negatives between the 90th and 99th percentile of similarity). Not annealed by default,
as every released config; `:anneal=linear` is the paper's setting scaled to this run (outer 1.0 →
0.1 over the first half of training, 1.5 of 3 epochs, as the paper's 100 of 200); `:ball` is the
ball lesion. The Ring code's 32-px transforms (`iring_cifar10.py:mocov2_32x32`) add blur p 0.5 to
that augmentation; its default 224-px upsampled `instance_discrimination` input is not used, since
this run stays at 32 px with the CIFAR stem. Sources: mhw32/contrastive-ring-public @fb3e1c2
(`src/objectives/instdisc.py` `NCERing` L117, `src/utils/policy.py`). `:runlocal` as
`ir_color_fashion_mnist.py`: 6 steps of 32 images, a bank of 256 and 64 draws.
"""

from configs import common, ir_color_fashion_mnist


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False)
    c = ir_color_fashion_mnist.get_config(common.parent_arg(arg, "anneal", "ball"))
    return common.ring_from(c, "iring", a.anneal, a.ball, anneal_epochs=1.5)  # half of the 3 epochs
