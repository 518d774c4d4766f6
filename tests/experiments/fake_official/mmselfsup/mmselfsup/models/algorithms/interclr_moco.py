"""Fake `InterCLRMoCo`: MoCo's query/key encoders and queue, an inter loss against the bank's
same-cluster positive and pool negatives, the memory update; the CUDA calls of the official file
(`.cuda()`, `device='cuda'`, `torch.cuda.LongTensor`) kept."""

import torch
import torch.nn as nn

from mmselfsup.utils import batch_shuffle_ddp, batch_unshuffle_ddp, concat_all_gather

from ..builder import ALGORITHMS, build_backbone, build_head, build_memory, build_neck
from .base import BaseModel


@ALGORITHMS.register_module()
class InterCLRMoCo(BaseModel):
    def __init__(
        self,
        backbone,
        neck,
        head,
        queue_len,
        feat_dim,
        momentum,
        memory_bank,
        online_labels,
        neg_num,
        semihard_neg_pool_num,
        intra_loss_weight,
        inter_loss_weight,
        inter_cos_margin,
        **kwargs,
    ):
        super().__init__()
        self.encoder_q = nn.Sequential(build_backbone(backbone), build_neck(neck))
        self.encoder_k = nn.Sequential(build_backbone(backbone), build_neck(neck))
        self.backbone, self.neck = self.encoder_q[0], self.encoder_q[1]
        self.head, self.memory_bank = build_head(head), build_memory(memory_bank)
        self.queue_len, self.momentum, self.online_labels = queue_len, momentum, online_labels
        self.neg_num, self.pool = neg_num, semihard_neg_pool_num
        self.intra_loss_weight, self.inter_loss_weight = intra_loss_weight, inter_loss_weight
        self.margin = inter_cos_margin
        self.register_buffer(
            "queue", nn.functional.normalize(torch.randn(feat_dim, queue_len), dim=0)
        )
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    def init_weights(self):
        super().init_weights()
        for q, k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            k.data.copy_(q.data)
            k.requires_grad = False

    def extract_feat(self, img):
        return self.backbone(img)

    def forward_train(self, img, idx, **kwargs):
        q = self.encoder_q[1](self.encoder_q[0](img[0]))[0]
        with torch.no_grad():
            for pq, pk in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
                pk.data = pk.data * self.momentum + pq.data * (1.0 - self.momentum)
            im_k, idx_unshuffle = batch_shuffle_ddp(img[1])
            k = batch_unshuffle_ddp(self.encoder_k[1](self.encoder_k[0](im_k))[0], idx_unshuffle)
        idx = idx.cuda()
        self.memory_bank.broadcast_feature_bank()
        qn, kn = nn.functional.normalize(q, dim=1), nn.functional.normalize(k, dim=1)
        intra = self.head((qn * kn).sum(1, keepdim=True), qn @ self.queue.clone().detach())
        bank, labels = self.memory_bank.feature_bank, self.memory_bank.label_bank
        pos_label = labels[idx.cpu()]
        pos_idx = torch.cuda.LongTensor(
            [int(torch.where(labels == lab)[0][0]) for lab in pos_label]
        )
        weights = torch.ones((len(q), self.pool), dtype=torch.float, device="cuda")
        pool = torch.topk(qn.detach() @ bank.T, self.pool, dim=1)[1]
        neg_idx = torch.gather(pool, 1, torch.multinomial(weights, self.neg_num))
        pos = (bank[pos_idx] * qn).sum(1, keepdim=True) - self.margin
        inter = self.head(pos, torch.bmm(bank[neg_idx], qn.unsqueeze(2)).squeeze(2))
        keys = concat_all_gather(kn)
        ptr = int(self.queue_ptr)
        self.queue[:, ptr : ptr + len(keys)] = keys.T
        self.queue_ptr[0] = (ptr + len(keys)) % self.queue_len
        losses = dict(
            intra_loss=self.intra_loss_weight * intra["loss"],
            inter_loss=self.inter_loss_weight * inter["loss"],
        )
        if self.online_labels:
            losses["change_ratio"] = self.memory_bank.update_samples_memory(idx, k.detach())
        else:
            self.memory_bank.update_simple_memory(idx, k.detach())
        return losses
