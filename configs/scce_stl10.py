"""The old name of `sce_stl10.py`, kept one release (`common.RENAMED`)."""

from configs import common, sce_stl10


def get_config(arg=None):
    return common.renamed(sce_stl10, arg)
