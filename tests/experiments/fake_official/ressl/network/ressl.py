"""A fake `network/ressl.py` (the harness's tests): `ReSSL` with the official entry points (EMA
before the keys, shuffle through `concat_all_gather` / broadcast / rank, the queue) and the
CUDA / torch.distributed calls, on a tiny scale. Not the official code."""

import torch
import torch.nn as nn
from network.backbone import *  # noqa: F403


class ReSSL(nn.Module):
    def __init__(self, backbone="resnet50", dim=512, K=65536 * 2, m=0.999):
        super().__init__()
        self.K, self.m = K, m
        self.encoder_q = BackBone(backbone=backbone, dim=dim)  # noqa: F405
        self.encoder_k = BackBone(backbone=backbone, dim=dim)  # noqa: F405
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.copy_(param_q.data)
            param_k.requires_grad = False
        self.register_buffer("queue", nn.functional.normalize(torch.randn(dim, K), dim=0))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))
        self.views = []

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        keys = concat_all_gather(keys)
        ptr = int(self.queue_ptr)
        self.queue[:, ptr : ptr + keys.shape[0]] = keys.T
        self.queue_ptr[0] = (ptr + keys.shape[0]) % self.K

    def forward(self, im_q, im_k):
        self.views.append((float(im_q.min()), float(im_k.min())))
        q = self.encoder_q(im_q)
        with torch.no_grad():
            for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
                param_k.data = param_k.data * self.m + param_q.data * (1.0 - self.m)
            idx_shuffle = torch.randperm(im_k.shape[0]).cuda()
            torch.distributed.broadcast(idx_shuffle, src=0)
            rank = torch.distributed.get_rank()
            k = self.encoder_k(concat_all_gather(im_k)[idx_shuffle.view(1, -1)[rank]])
            k = k[torch.argsort(idx_shuffle)]
        queue = self.queue.clone().detach()
        logitsq, logitsk = q @ queue, k @ queue
        self._dequeue_and_enqueue(k)
        return logitsq, logitsk


@torch.no_grad()
def concat_all_gather(tensor):
    gathered = [torch.ones_like(tensor) for _ in range(torch.distributed.get_world_size())]
    torch.distributed.all_gather(gathered, tensor)
    return torch.cat(gathered, dim=0)
