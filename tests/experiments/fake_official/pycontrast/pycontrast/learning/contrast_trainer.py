"""A fake PyContrast `learning/contrast_trainer.py` (the harness's tests): `wrap_up` (DDP, the EMA
copy), the memory broadcast, `_train_moco`'s order (shuffle-BN keys through the local group,
the query and jigsaw forwards, (1 − β)·CE + β·CE_jig, the step, then the EMA) and the CUDA /
torch.distributed calls, on a tiny scale. Not the official code."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from .base_trainer import BaseTrainer

INSTANCES = []


class ContrastTrainer(BaseTrainer):
    def __init__(self, args):
        super().__init__(args)
        self.events, self.stepped, self.jigsaw_shapes, self.saved = [], [], [], []
        INSTANCES.append(self)

    def logging(self, epoch, logs, lr):
        self.logger.log_value("loss", logs[0], epoch)
        self.logger.log_value("learning_rate", lr, epoch)

    def wrap_up(self, model, model_ema, optimizer):
        model.cuda(self.args.gpu)
        model_ema.cuda(self.args.gpu)
        model = DDP(model, device_ids=[self.args.gpu])
        self.momentum_update(model.module, model_ema, 0)
        return model, model_ema, optimizer

    def broadcast_memory(self, contrast):
        dist.broadcast(contrast.memory, 0)

    def resume_model(self, model, model_ema, contrast, optimizer):
        return 1

    def save(self, model, model_ema, contrast, optimizer, epoch):
        self.saved.append(epoch)

    def train(self, epoch, train_loader, model, model_ema, contrast, criterion, optimizer):
        return self._train_moco(
            epoch, train_loader, model, model_ema, contrast, criterion, optimizer
        )

    def _shuffle_bn(self, x, model_ema):
        gathered = [torch.ones_like(x) for _ in range(dist.get_world_size(self.local_group))]
        dist.all_gather(gathered, x.contiguous(), group=self.local_group)
        ids = torch.randperm(x.size(0)).cuda()
        dist.broadcast(ids, 0)
        with torch.no_grad():
            k = model_ema(torch.cat(gathered)[ids], mode=1)
        all_k = [torch.ones_like(k) for _ in range(dist.get_world_size())]
        dist.all_gather(all_k, k)
        k = torch.cat(all_k)[torch.argsort(ids)]
        return k, k

    @staticmethod
    def _compute_loss_accuracy(logits, target, criterion):
        return [criterion(logit, target) for logit in logits], [[0.0] for _ in logits]

    def _train_moco(self, epoch, train_loader, model, model_ema, contrast, criterion, optimizer):
        a = self.args
        model.train()
        model_ema.eval()
        total = 0.0
        for idx, data in enumerate(train_loader):
            inputs = data[0].float().cuda(a.gpu, non_blocking=True)
            self.warmup_learning_rate(epoch, idx, len(train_loader), optimizer)
            x1, x2 = torch.split(inputs, [3, 3], dim=1)
            k, all_k = self._shuffle_bn(x2, model_ema)
            self.events.append("keys")
            if a.jigsaw:
                jig = data[2].float().cuda(a.gpu, non_blocking=True)
                self.jigsaw_shapes.append(tuple(jig.shape))
                q, q_jig = model(x1, jig.view(-1, *jig.shape[2:]))
                output = contrast(q, k, q_jig, all_k)
                losses, _ = self._compute_loss_accuracy(output[:-1], output[-1], criterion)
                loss = (1 - a.beta) * losses[0] + a.beta * losses[1]
            else:
                output = contrast(model(x1), k, all_k=all_k)
                losses, _ = self._compute_loss_accuracy(output[:-1], output[-1], criterion)
                loss = losses[0]
            self.events.append("query")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            self.events.append("step")
            self.stepped.append(float(loss.detach()))
            total += float(losses[0].detach())
            self.momentum_update(model.module, model_ema, a.alpha)
            self.events.append("ema")
        return total, 0.0, 0.0, 0.0

    @staticmethod
    def momentum_update(model, model_ema, m):
        for p1, p2 in zip(model.parameters(), model_ema.parameters()):
            p2.data.mul_(m).add_(p1.detach().data, alpha=1 - m)
