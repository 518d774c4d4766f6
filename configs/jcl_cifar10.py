"""JCL on CIFAR-10: ResNet-18 with the CIFAR stem (3×3 conv, no max-pool), 32 px.

The JCL code and paper have no small-dataset setting. JCL's own numbers are the released code's (M'
= 4, λ 2.0 ramped per epoch as λ·(epoch+1)/epochs, τ 0.2, m 0.999, mean keys in the queue);
everything else is `mocov2_cifar10.py`'s numbers (built by its `get_config`, turned into JCL by
`common.jcl_from_mocov2`) so that the two compare at the same budget: queue
4096, batch 256, SGD lr 0.03, wd 1e-4, cosine over 200 epochs, MLP head 512-512-128, MoCo v2
augmentation at 32 px without blur, shuffle-BN with 8 BN groups over the 4 × 256 key crops (128 per
group, as each GPU of the official 8-GPU run sees), kNN monitor every 2000 steps. `:runlocal` trains
a few steps on Fashion-MNIST (CIFAR is not on CPU CI) with a 256-entry queue.
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_cifar10.py:keys=8,runlocal`.
"""

from configs import common, mocov2_cifar10


def get_config(arg=None):
    a = common.parse_arg(arg, keys=4)  # M' = 4: the released script's `k_crops=5`
    return common.jcl_from_mocov2(mocov2_cifar10.get_config(common.parent_arg(arg, "keys")), a.keys)
