"""Fake gathers over the process group (torch.distributed.all_gather)."""

import numpy as np
import torch
import torch.distributed as dist


@torch.no_grad()
def concat_all_gather(tensor):
    out = [torch.ones_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(out, tensor)
    return torch.cat(out, dim=0)


def gather_tensors(array):
    tensor = torch.Tensor(array.reshape(-1)).cuda()
    out = [torch.ones_like(tensor) for _ in range(dist.get_world_size())]
    dist.all_gather(out, tensor)
    return [x.cpu().numpy().reshape(array.shape) for x in out]


def gather_tensors_batch(array, part_size=100, ret_rank=-1):
    parts = [gather_tensors(array[i : i + part_size]) for i in range(0, len(array), part_size)]
    return [np.concatenate([p[r] for p in parts]) for r in range(len(parts[0]))]
