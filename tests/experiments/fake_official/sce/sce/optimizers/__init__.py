"""A fake `sce.optimizers` (the harness's tests): `optimizer_factory` builds SGD over the
model's learnable parameters and instantiates its scheduler config."""

import torch

from sce.models.siamese.base import hydra


def optimizer_factory(
    name,
    initial_lr,
    model,
    batch_size=None,
    num_steps_per_epoch=None,
    scaler=None,
    params=None,
    scheduler=None,
    **flags,
):
    optimizer = torch.optim.SGD(model.learnable_params, lr=initial_lr, **(params or {}))
    scheduler = hydra.utils.instantiate(
        scheduler, num_steps_per_epoch=num_steps_per_epoch, optimizer=optimizer
    )
    return optimizer, scheduler
