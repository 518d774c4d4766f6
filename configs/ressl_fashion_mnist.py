"""ReSSL on Fashion-MNIST: the small CPU job of `scce_fashion_mnist.py` with the ReSSL loss.

Not from a paper: everything as `scce_fashion_mnist.py` (weak view → target, fashion jitter view →
online, width-1/4 ResNet-18, 3 epochs, final linear-probe table); only the loss and τ_m change.
The ReSSL loss takes τ 0.1 and τ_m 0.04 (`scce_cifar10.method_config` says what it computes and
where the temperatures come from).
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from ssl_jax import configs


def get_config(arg=None):
    return configs.sibling(__file__, "scce_fashion_mnist").build(arg, "ressl")
