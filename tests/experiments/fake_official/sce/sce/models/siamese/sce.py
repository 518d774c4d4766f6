"""A fake `sce/models/siamese/sce.py` (the harness's tests): `SCEModel` with the official entry
points (`training_step` on `batch["input"]`, weak view 0 → momentum, strong view 1 → online;
`compute_loss`, `update_queue`, `on_train_batch_end` with the EMA after the step) on a tiny
scale, importing `sce.utils.strategies` as the official base classes do. Not the official
code."""

import torch
import torch.nn as nn

from sce.models.siamese.base import hydra
from sce.utils.strategies import get_num_devices_in_trainer  # noqa: F401

DictConfig = dict


class SCEModel(nn.Module):
    def __init__(
        self,
        trunk,
        optimizer,
        projector=None,
        predictor=None,
        normalize_outputs=True,
        num_global_crops=2,
        num_local_crops=0,
        initial_momentum=0.999,
        scheduler_momentum="constant",
        shuffle_bn=True,
        num_devices=1,
        simulate_n_devices=8,
        queue=None,
        sym=False,
        temp=0.1,
        temp_m=0.05,
        coeff=0.5,
    ):
        super().__init__()
        self.trunk = hydra.utils.instantiate(trunk)
        self.projector = hydra.utils.instantiate(projector)
        self.momentum_trunk = hydra.utils.instantiate(trunk)  # not copied, as the official
        self.momentum_projector = hydra.utils.instantiate(projector)
        for p in list(self.momentum_trunk.parameters()) + list(
            self.momentum_projector.parameters()
        ):
            p.requires_grad = False
        self.optimizer_cfg = optimizer
        self.current_momentum = initial_momentum
        self.temp, self.temp_m, self.coeff = temp, temp_m, coeff
        self.splits = simulate_n_devices
        self.queue_size = queue["size"]
        self.register_buffer(
            "queue",
            nn.functional.normalize(torch.randn(queue["feature_dim"], queue["size"]), dim=0),
        )
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))
        self.seen_views = []
        self.momentum_steps = 0

    @property
    def learnable_params(self):
        return list(self.trunk.parameters()) + list(self.projector.parameters())

    def compute_loss(self, q, k):
        queue = self.queue.clone().detach()
        sim_q = torch.cat([(q * k).sum(1, keepdim=True), q @ queue], 1)
        sim_k = torch.cat([torch.zeros(len(k), 1), k @ queue], 1)
        mask = nn.functional.one_hot(torch.zeros(len(q), dtype=torch.long), sim_q.shape[1])
        target = self.coeff * mask + (1 - self.coeff) * torch.softmax(sim_k / self.temp_m, 1)
        return -(target * torch.log_softmax(sim_q / self.temp, 1)).sum(1).mean()

    @torch.no_grad()
    def update_queue(self, x):
        ptr = int(self.queue_ptr)
        assert self.queue_size % x.shape[0] == 0
        self.queue[:, ptr : ptr + x.shape[0]] = x.T
        self.queue_ptr[0] = (ptr + x.shape[0]) % self.queue_size

    def training_step(self, batch, batch_idx):
        X = batch["input"]
        self.seen_views.append([float(x.min()) for x in X])
        q = nn.functional.normalize(self.projector(self.trunk(X[1])), dim=1)
        with torch.no_grad():
            k = nn.functional.normalize(self.momentum_projector(self.momentum_trunk(X[0])), dim=1)
        loss = self.compute_loss(q, k)
        self.update_queue(k)
        return {"loss": loss}

    @torch.no_grad()
    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.momentum_steps += 1
        for online, target in (
            (self.trunk, self.momentum_trunk),
            (self.projector, self.momentum_projector),
        ):
            for p, t in zip(online.parameters(), target.parameters()):
                t.data = self.current_momentum * t.data + (1 - self.current_momentum) * p.data
