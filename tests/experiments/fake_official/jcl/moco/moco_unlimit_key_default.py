"""A fake `moco/moco_unlimit_key_default.py` (the harness's tests): the official entry points
(`MoCoUnlimitedKeysDefault` with its queue of mean keys, the shuffle over all M'·N key crops,
`forward(im_q, im_k, ratio)` returning logits, labels and `jcl_loss`) and the calls that need CUDA
and torch.distributed, on a tiny scale. Not the official code."""

import torch
import torch.nn as nn

from .utils import concat_all_gather


class MoCoUnlimitedKeysDefault(nn.Module):
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
        self.keys_per_query = []  # the fake's own record: M' of each forward

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        keys = concat_all_gather(keys)
        ptr = int(self.queue_ptr)
        assert self.K % keys.shape[0] == 0
        self.queue[:, ptr : ptr + keys.shape[0]] = keys.T
        self.queue_ptr[0] = (ptr + keys.shape[0]) % self.K

    @torch.no_grad()
    def _batch_shuffle_ddp(self, x):
        x_gather = concat_all_gather(x)
        num_gpus = x_gather.shape[0] // x.shape[0]
        idx_shuffle = torch.randperm(x_gather.shape[0]).cuda()
        torch.distributed.broadcast(idx_shuffle, src=0)
        rank = torch.distributed.get_rank()
        return x_gather[idx_shuffle.view(num_gpus, -1)[rank]], torch.argsort(idx_shuffle)

    def forward(self, im_q, im_k, ratio=1.0):
        q = nn.functional.normalize(self.encoder_q(im_q), dim=1)
        with torch.no_grad():
            for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
                param_k.data = param_k.data * self.m + param_q.data * (1.0 - self.m)
            im_k, idx_unshuffle = self._batch_shuffle_ddp(im_k)
            k = nn.functional.normalize(self.encoder_k(im_k), dim=1)
            k = concat_all_gather(k)[idx_unshuffle]
            tries = k.shape[0] // q.shape[0]
            self.keys_per_query.append(tries)
            k = k.view(tries, q.shape[0], -1)
            mean = k.mean(0)
            centred = k - mean
            sigma = torch.einsum("mnc,mnd->ncd", centred, centred) / tries * ratio / self.T
        q_sigma_q = torch.einsum("nc,ncd,nd->n", q, sigma, q)
        l_pos = ((q * mean).sum(1) + 0.5 * q_sigma_q).unsqueeze(-1)
        logits = torch.cat([l_pos, q @ self.queue.clone().detach()], 1) / self.T
        labels = torch.zeros(logits.shape[0], dtype=torch.long).cuda()
        self._dequeue_and_enqueue(mean)
        return logits, labels, 0.5 * q_sigma_q.mean() / self.T
