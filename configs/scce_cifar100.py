"""The old name of `sce_cifar100.py`, kept one release (`common.RENAMED`)."""

from configs import common, sce_cifar100


def get_config(arg=None):
    return common.renamed(sce_cifar100, arg)
