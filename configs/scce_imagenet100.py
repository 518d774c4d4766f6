"""The old name of `sce_imagenet100.py`, kept one release (`common.RENAMED`)."""

from configs import common, sce_imagenet100


def get_config(arg=None):
    return common.renamed(sce_imagenet100, arg)
