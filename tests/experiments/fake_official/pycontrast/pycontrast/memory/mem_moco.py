"""A fake PyContrast `memory/mem_moco.py` (the harness's tests): `RGBMoCo`, the queue's logits
for the query and the jigsaw query, the FIFO update, `.cuda()` calls. Not the official code."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class RGBMoCo(nn.Module):
    def __init__(self, n_dim, K=65536, T=0.07):
        super().__init__()
        self.K, self.T, self.index = K, T, 0
        self.register_buffer("memory", F.normalize(torch.randn(K, n_dim)))

    def _logits(self, q, k, queue):
        return torch.cat([(q * k).sum(1, keepdim=True), q @ queue.T], dim=1) / self.T

    def forward(self, q, k, q_jig=None, all_k=None):
        k = k.detach()
        queue = self.memory.clone().detach()
        logits = [self._logits(q, k, queue)]
        if q_jig is not None:
            logits.append(self._logits(q_jig, k, queue))
        labels = torch.zeros(q.size(0), dtype=torch.long).cuda()
        all_k = all_k if all_k is not None else k
        ids = torch.fmod(torch.arange(all_k.size(0)).cuda() + self.index, self.K)
        self.memory.index_copy_(0, ids, all_k)
        self.index = (self.index + all_k.size(0)) % self.K
        return (*logits, labels)
