"""A fake PyContrast `memory/build_memory.py` (the harness's tests). Not the official code."""

from .mem_moco import RGBMoCo


def build_mem(opt, n_data):
    return RGBMoCo(opt.feat_dim, opt.nce_k, opt.nce_t)
