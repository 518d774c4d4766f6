"""The old name of `sce_imagenet.py`, kept one release (`common.RENAMED`)."""

from configs import common, sce_imagenet


def get_config(arg=None):
    return common.renamed(sce_imagenet, arg)
