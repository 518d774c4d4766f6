"""ReSSL on STL-10, the relational baseline of SCE (paper Tab. 5).

Everything as `scce_stl10.py` (the official CIFAR-10 config on STL-10's unlabelled split at 96 px;
the paper's STL-10 values are in its unavailable supplementary); only the loss and τ_m change.
The ReSSL loss takes τ 0.1 and τ_m 0.04 (`scce_cifar10.method_config` says what it computes and
where the temperatures come from).
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from ssl_jax import configs


def get_config(arg=None):
    return configs.sibling(__file__, "scce_stl10").build(arg, "ressl")
