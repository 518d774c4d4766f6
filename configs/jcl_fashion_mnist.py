"""JCL on Fashion-MNIST: the small job to compare with `mocov2_fashion_mnist.py` on 2 CPU cores.

Not from a paper: everything but the method is `mocov2_fashion_mnist.py`'s numbers (built by its `get_config`,
turned into JCL by `common.jcl_from_mocov2`: ResNet-18, CIFAR
stem, width 1/4, 28-px grayscale, MLP 256-128, batch 256, 3 epochs, SGD lr 0.06 wd 5e-4 cosine, m
0.99, queue 4096, shuffle-BN with 8 groups, the crop+flip+jitter recipe), so the two runs differ
only in the loss and in JCL's extra key crops (tests check that the configs differ in nothing
else). JCL's own numbers are the released code's: M' = 4 keys, λ 2.0 ramped per epoch as
λ·(epoch+1)/epochs, τ 0.2, mean keys in the queue. Pretraining is followed by the linear-probe
table (pretrained vs random init vs raw pixels).
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_fashion_mnist.py:keys=8,runlocal`.
`:runlocal` trains 6 steps of 32 images at width 1/8.
"""

from configs import common, mocov2_fashion_mnist


def get_config(arg=None):
    a = common.parse_arg(arg, keys=4)  # M' = 4: the released script's `k_crops=5`
    return common.jcl_from_mocov2(
        mocov2_fashion_mnist.get_config(common.parent_arg(arg, "keys")), a.keys
    )
