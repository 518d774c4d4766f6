"""A fake JCL `moco/utils.py` (the harness's tests): `concat_all_gather` over torch.distributed and
`setup_logger` with the official signature. Not the official code."""

import logging

import torch


@torch.no_grad()
def concat_all_gather(tensor):
    gathered = [torch.ones_like(tensor) for _ in range(torch.distributed.get_world_size())]
    torch.distributed.all_gather(gathered, tensor, async_op=False)
    return torch.cat(gathered, dim=0)


def setup_logger(output=None, distributed_rank=0, *, color=True, name="moco", abbrev_name=None):
    if output is not None:
        raise AssertionError("the harness writes no log file into the checkout's out_folder")
    return logging.getLogger(name)
