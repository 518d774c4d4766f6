"""The old name of `sce_imagenet_multicrop.py`, kept one release (`common.RENAMED`)."""

from configs import common, sce_imagenet_multicrop


def get_config(arg=None):
    return common.renamed(sce_imagenet_multicrop, arg)
