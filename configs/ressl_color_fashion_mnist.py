"""ReSSL on color_fashion_mnist at 32 px, on RGB: `sce_color_fashion_mnist.py` with the ReSSL loss.

Not from a paper: everything as `sce_color_fashion_mnist.py` (built by its `get_config`: weak
view → target, strong view → online, the official SCE CIFAR-10 views `recipes.cifar_soft(32)` /
`recipes.cifar_strong(32)` as `ressl_cifar10.py` — colour jitter, grayscale and blur on the strong
view, which `ressl_fashion_mnist.py`'s `fashion_mnist_default` leaves out because its images are
grey —, ResNet-18 CIFAR stem at width 1/2, projector → 256 (BN, ReLU) → 128, queue 4096, momentum
0.99 constant, shuffle-BN in 8 key BN groups of 32 on the target trunk, batch 256, 3 epochs, SGD lr
0.06 × batch/256, wd 5e-4 on every parameter, cosine, no warm-up, the final probe table, no kNN
monitor); only the loss and τ_m change, as `ressl_fashion_mnist.py` does from
`sce_fashion_mnist.py`.
The ReSSL loss and τ_m 0.04 as `common.ressl_from_sce` says.
`:runlocal` trains 6 steps of 32 images at width 1/8 with a 256-entry queue.
"""

from configs import common, sce_color_fashion_mnist


def get_config(arg=None):
    return common.ressl_from_sce(sce_color_fashion_mnist.get_config(arg))
