"""ReSSL on STL-10, the relational baseline of SCE (paper Tab. 5).

Everything as `sce_stl10.py` (built by its `get_config`: the official CIFAR-10 config on STL-10's unlabelled split at 96 px;
the paper's STL-10 values are in its unavailable supplementary); only the loss and τ_m change.
The ReSSL loss and τ_m 0.04 as `common.ressl_from_sce` says.
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from configs import common, sce_stl10


def get_config(arg=None):
    return common.ressl_from_sce(sce_stl10.get_config(arg))
