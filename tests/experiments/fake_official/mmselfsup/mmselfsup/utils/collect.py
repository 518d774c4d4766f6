"""Fake forward-and-collect over a loader, gathered over the process group."""

import mmcv
import numpy as np
import torch

from .gather import gather_tensors_batch


def nondist_forward_collect(func, data_loader, length):
    raise NotImplementedError("InterCLR extracts in dist mode")


def dist_forward_collect(func, data_loader, rank, length, ret_rank=-1):
    bar = mmcv.ProgressBar(len(data_loader))
    results = []
    for data in data_loader:
        with torch.no_grad():
            results.append(func(**data))
        bar.update()
    out = {}
    for key in results[0]:
        cat = np.concatenate([r[key].numpy() for r in results])
        out[key] = np.concatenate(gather_tensors_batch(cat, part_size=20))[:length]
    return out
