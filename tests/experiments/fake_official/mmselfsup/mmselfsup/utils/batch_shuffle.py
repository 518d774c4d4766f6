"""Fake batch shuffle over the process group: gather, a broadcast permutation, this rank's part."""

import torch

from .gather import concat_all_gather


@torch.no_grad()
def batch_shuffle_ddp(x):
    gathered = concat_all_gather(x)
    idx_shuffle = torch.randperm(len(gathered)).cuda()
    torch.distributed.broadcast(idx_shuffle, src=0)
    gpus = len(gathered) // len(x)
    return gathered[idx_shuffle.view(gpus, -1)[torch.distributed.get_rank()]], torch.argsort(
        idx_shuffle
    )


@torch.no_grad()
def batch_unshuffle_ddp(x, idx_unshuffle):
    gathered = concat_all_gather(x)
    gpus = len(gathered) // len(x)
    return gathered[idx_unshuffle.view(gpus, -1)[torch.distributed.get_rank()]]
