"""A fake `sce.schedulers` (the harness's tests): a per-step cosine over the epochs' steps."""

import math

import torch


def scheduler_factory(optimizer, name, params, interval="epoch", num_steps_per_epoch=None):
    total = num_steps_per_epoch * params["max_epochs"]
    cosine = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: 0.5 * (1 + math.cos(math.pi * step / total))
    )
    return {"scheduler": cosine, "interval": interval}
