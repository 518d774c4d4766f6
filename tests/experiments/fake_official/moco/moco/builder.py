"""A fake `moco/builder.py` for the harness's tests: the official entry points (`MoCo` with its
queue, `_dequeue_and_enqueue`, `_batch_shuffle_ddp`, `concat_all_gather`) and the calls that need
CUDA and torch.distributed, on a tiny scale. Not the official code."""

import torch
import torch.nn as nn


class MoCo(nn.Module):
    def __init__(self, base_encoder, dim=128, K=65536, m=0.999, T=0.07, mlp=False):
        super().__init__()
        self.K, self.m, self.T = K, m, T
        self.encoder_q = base_encoder(num_classes=dim)
        self.encoder_k = base_encoder(num_classes=dim)
        if mlp:
            dim_mlp = self.encoder_q.fc.weight.shape[1]
            self.encoder_q.fc = nn.Sequential(
                nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_q.fc
            )
            self.encoder_k.fc = nn.Sequential(
                nn.Linear(dim_mlp, dim_mlp), nn.ReLU(), self.encoder_k.fc
            )
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.copy_(param_q.data)
            param_k.requires_grad = False
        self.register_buffer("queue", nn.functional.normalize(torch.randn(dim, K), dim=0))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        keys = concat_all_gather(keys)
        ptr = int(self.queue_ptr)
        self.queue[:, ptr : ptr + keys.shape[0]] = keys.T
        self.queue_ptr[0] = (ptr + keys.shape[0]) % self.K

    @torch.no_grad()
    def _batch_shuffle_ddp(self, x):
        x_gather = concat_all_gather(x)
        idx_shuffle = torch.randperm(x_gather.shape[0]).cuda()
        torch.distributed.broadcast(idx_shuffle, src=0)
        rank = torch.distributed.get_rank()
        return x_gather[idx_shuffle.view(1, -1)[rank]], torch.argsort(idx_shuffle)

    def forward(self, im_q, im_k):
        q = nn.functional.normalize(self.encoder_q(im_q), dim=1)
        with torch.no_grad():
            for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
                param_k.data = param_k.data * self.m + param_q.data * (1.0 - self.m)
            im_k, idx_unshuffle = self._batch_shuffle_ddp(im_k)
            k = nn.functional.normalize(self.encoder_k(im_k), dim=1)[idx_unshuffle]
        logits = torch.cat([(q * k).sum(1, keepdim=True), q @ self.queue.clone().detach()], 1)
        labels = torch.zeros(logits.shape[0], dtype=torch.long).cuda()
        self._dequeue_and_enqueue(k)
        return logits / self.T, labels


@torch.no_grad()
def concat_all_gather(tensor):
    gathered = [torch.ones_like(tensor) for _ in range(torch.distributed.get_world_size())]
    torch.distributed.all_gather(gathered, tensor, async_op=False)
    return torch.cat(gathered, dim=0)
