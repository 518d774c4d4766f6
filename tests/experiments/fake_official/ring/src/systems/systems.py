"""A fake `src/systems/systems.py` for the harness's tests: the Ring code's entry points (a
Lightning system with a memory bank or a queue, `get_losses_for_batch`, `training_step`,
`configure_optimizers`, `train_dataloader`, the threshold policies, `DotMap`) on a tiny scale, with
the imports the harness stands in for (`pytorch_lightning`, and `cv2` through `datasets`). Not the
official code."""

import pytorch_lightning as pl
import torch

from src.datasets import datasets
from src.models.resnet2 import CustomResNet
from src.objectives.memory import MemoryBank
from src.utils import utils
from src.utils.policy import ConstantThresholdPolicy, LinearThresholdPolicy


class DotMap(dict):
    """Keys as attributes; a missing key is an empty (falsy) map."""

    def __init__(self, items=()):
        super().__init__(
            {k: DotMap(v) if isinstance(v, dict) else v for k, v in dict(items).items()}
        )

    def __getattr__(self, key):
        return self[key] if key in self else DotMap()


class PretrainNCESystem(pl.LightningModule):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.train_dataset, _ = datasets.get_datasets(None, config.data_params.dataset)
        self.train_ordered_labels = list(self.train_dataset.dataset.targets)
        self.model = CustomResNet("resnet18", config.model_params.out_dim)
        self.memory_bank = MemoryBank(len(self.train_dataset), config.model_params.out_dim)
        steps = config.num_epochs * (len(self.train_dataset) // config.optim_params.batch_size)
        lp = config.loss_params
        if lp.linear_anneal:
            self.thres_outer_policy = LinearThresholdPolicy(steps, steps // 2)
        else:
            self.thres_outer_policy = ConstantThresholdPolicy(lp.thres_outer)
        self.seen_thresholds = []

    def configure_optimizers(self):
        o = self.config.optim_params
        return [
            torch.optim.SGD(
                self.model.parameters(),
                o.learning_rate,
                momentum=o.momentum,
                weight_decay=o.weight_decay,
            )
        ], []

    def train_dataloader(self):
        return torch.utils.data.DataLoader(
            self.train_dataset,
            batch_size=self.config.optim_params.batch_size,
            shuffle=True,
            drop_last=True,
        )

    def get_losses_for_batch(self, batch, train=True):
        indices, img, _ = batch
        out = utils.l2_normalize(self.model(img)[1])
        lp = self.config.loss_params
        self.seen_thresholds.append(self.thres_outer_policy.get_threshold(self.global_step))
        noise = torch.randint(0, self.memory_bank.size, (len(indices), lp.k - 1))
        cols = torch.cat([indices[:, None], noise], 1)
        sims = (self.memory_bank.as_tensor()[cols] * out[:, None]).sum(-1) / lp.t
        loss = -(sims[:, 0] - sims.logsumexp(1)).mean()
        with torch.no_grad():
            old = self.memory_bank.at_idxs(indices)
            self.memory_bank.update(indices, utils.l2_normalize(lp.m * old + (1 - lp.m) * out))
        return loss, (0.1, 0.1)

    def training_step(self, batch, batch_idx):
        loss, _ = self.get_losses_for_batch(batch)
        self.log_dict({"loss": loss})
        return loss


class PretrainMoCoSystem(PretrainNCESystem):
    def __init__(self, config):
        super().__init__(config)
        self.model_k = CustomResNet("resnet18", config.model_params.out_dim)
        for q, k in zip(self.model.parameters(), self.model_k.parameters()):
            k.data.copy_(q.data)
            k.requires_grad = False
        self.register_buffer(
            "queue",
            utils.l2_normalize(torch.randn(config.loss_params.k, config.model_params.out_dim)),
        )
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    def get_losses_for_batch(self, batch, train=True):
        _, img1, img2, _ = batch
        q = utils.l2_normalize(self.model(img1)[1])
        with torch.no_grad():
            m = self.config.loss_params.m
            for pq, pk in zip(self.model.parameters(), self.model_k.parameters()):
                pk.data = pk.data * m + pq.data * (1 - m)
            assert not (self.use_ddp or self.use_ddp2)
            k = utils.l2_normalize(self.model_k(img2)[1])
        logits = torch.cat([(q * k).sum(1, keepdim=True), q @ self.queue.clone().T], 1)
        loss = torch.nn.functional.cross_entropy(
            logits / self.config.loss_params.t, torch.zeros(len(q), dtype=torch.long)
        )
        ptr = int(self.queue_ptr)
        self.queue[ptr : ptr + len(k)] = k
        self.queue_ptr[0] = (ptr + len(k)) % self.config.loss_params.k
        return loss, (0.1, 0.1)
