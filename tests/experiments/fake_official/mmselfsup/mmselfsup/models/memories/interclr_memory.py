"""Fake `InterCLRMemory`: bank, labels, centroids on 'cuda', rank 0's bank broadcast; it counts
the calls the hook makes (centroid updates, small-cluster passes, offline label assignments)."""

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from mmcv.runner import BaseModule, get_dist_info

from mmselfsup.utils import AliasMethod

from ..builder import MEMORIES


@MEMORIES.register_module()
class InterCLRMemory(BaseModule):
    def __init__(self, length, feat_dim, momentum, num_classes, min_cluster, **kwargs):
        super().__init__()
        self.rank, self.num_replicas = get_dist_info()
        self.feature_bank = torch.zeros((length, feat_dim), dtype=torch.float32, device="cuda")
        self.label_bank = torch.zeros((length,), dtype=torch.long)
        self.centroids = torch.zeros((num_classes, feat_dim), dtype=torch.float32, device="cuda")
        self.momentum, self.num_classes, self.initialized = momentum, num_classes, False
        self.multinomial = AliasMethod(torch.ones(length))
        self.multinomial.cuda()
        self.calls = dict(centroids=0, small=0, assign=0, samples=0, simple=0)

    def init_memory(self, feature, label):
        self.initialized = True
        self.label_bank.copy_(torch.from_numpy(label).long())
        assert (np.bincount(label, minlength=self.num_classes) != 0).all()
        feature /= np.linalg.norm(feature, axis=1, keepdims=True) + 1e-12
        self.feature_bank.copy_(torch.from_numpy(feature))
        self.update_centroids_memory()
        self.calls["centroids"] = 0

    def assign_label(self, label):
        self.calls["assign"] += 1
        self.label_bank.copy_(torch.from_numpy(label).long())

    def broadcast_feature_bank(self):
        assert self.initialized
        dist.broadcast(self.feature_bank, 0)

    def _gather(self, ind, feature):
        inds = [torch.ones_like(ind).cuda() for _ in range(self.num_replicas)]
        feats = [torch.ones_like(feature).cuda() for _ in range(self.num_replicas)]
        dist.all_gather(inds, ind)
        dist.all_gather(feats, feature)
        return torch.cat(inds), torch.cat(feats)

    def update_simple_memory(self, ind, feature):
        self.calls["simple"] += 1
        ind, feature = self._gather(ind, nn.functional.normalize(feature))
        new = (1 - self.momentum) * self.feature_bank[ind] + self.momentum * feature
        self.feature_bank[ind] = nn.functional.normalize(new)

    def update_samples_memory(self, ind, feature):
        self.calls["samples"] += 1
        self.update_simple_memory(ind, feature)
        self.calls["simple"] -= 1
        dist.barrier()
        ind = ind.cpu()
        new = (self.centroids @ self.feature_bank[ind].T).argmax(dim=0)
        change = (new != self.label_bank[ind]).sum().float().cuda() / float(len(new))
        self.label_bank[ind] = new
        return change

    def update_centroids_memory(self, cinds=None):
        self.calls["centroids"] += 1
        for c in range(self.num_classes):
            members = self.label_bank == c
            if members.any():
                self.centroids[c] = self.feature_bank[members].mean(0)
        dist.broadcast(self.centroids, 0)

    def deal_with_small_clusters(self):
        self.calls["small"] += 1
