"""The old name of `sce_cifar10.py`, kept one release (`common.RENAMED`)."""

from configs import common, sce_cifar10


def get_config(arg=None):
    return common.renamed(sce_cifar10, arg)
