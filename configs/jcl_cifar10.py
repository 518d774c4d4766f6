"""JCL on CIFAR-10: ResNet-18 with the CIFAR stem (3×3 conv, no max-pool), 32 px.

The JCL code and paper have no small-dataset setting. JCL's own numbers are the released code's (M'
= 4, λ 2.0 ramped per epoch as λ·(epoch+1)/epochs, τ 0.2, m 0.999, mean keys in the queue);
everything else is `mocov2_cifar10.py` so that the two compare at the same budget: queue 4096, batch
256, SGD lr 0.03, wd 1e-4, cosine over 200 epochs, MLP head 512-512-128, MoCo v2 augmentation at 32
px without blur, shuffle-BN with 8 BN groups over the 4 × 256 key crops (128 per group, as each GPU
of the official 8-GPU run sees). `:runlocal` trains a few steps on Fashion-MNIST (CIFAR is not on
CPU CI).
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_cifar10.py:keys=8,runlocal`.
Built from `mocov2_cifar10.py` by `jcl_imagenet.from_mocov2`, which holds JCL's numbers.
"""

from ssl_jax import configs


def get_config(arg=None):
    return configs.sibling(__file__, "jcl_imagenet").from_mocov2("mocov2_cifar10", arg)
