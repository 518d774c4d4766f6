"""MoCo v2 on color_fashion_mnist at 32 px, on RGB: the baseline of the CMC (L | ab, Y | CbCr) runs.

Not an official configuration. MoCo v2's method as `mocov2_cifar10.py`, built by its `get_config` (τ 0.2, EMA before the keys,
MLP head 512-128, InfoNCE against a queue, key BN in 8 shuffled groups of 32) with the MoCo v2
augmentation at 32 px without the blur (RRC (0.2, 1), jitter 0.4/0.4/0.4/0.1 p 0.8, grayscale p 0.2,
flip), and the data, encoder, batch and SGD of `cmc_color_fashion_mnist.py` (`common.small_budget`: ResNet-18 CIFAR stem at
width 1/2 — CMC splits that width into two encoders of 1/4 —, batch 256, 3 epochs, lr 0.06, wd 5e-4,
cosine; ours), queue 4096, EMA 0.99 (ours, for 3 epochs). `:runlocal`: a few steps of 32 images.
"""

from configs import common, mocov2_cifar10


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = mocov2_cifar10.get_config(common.parent_arg(arg, "runlocal"))
    c.ema.base = 0.99
    common.small_budget(c, color=True)  # 32 px: the CIFAR-10 recipe and heads stay
    if a.runlocal:
        c.method_config.queue_size = 256
        common.runlocal(c)
    return c
