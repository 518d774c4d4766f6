"""The old name of `sce_fashion_mnist.py`, kept one release (`common.RENAMED`)."""

from configs import common, sce_fashion_mnist


def get_config(arg=None):
    return common.renamed(sce_fashion_mnist, arg)
