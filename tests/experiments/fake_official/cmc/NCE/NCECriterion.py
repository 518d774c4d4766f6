"""A fake `NCE/NCECriterion.py`: the binary NCE loss against uniform noise, and the softmax CE.
Not the official code."""

import torch
from torch import nn


class NCECriterion(nn.Module):
    def __init__(self, n_data):
        super().__init__()
        self.n_data = n_data

    def forward(self, x):
        m, pn = x.shape[1] - 1, 1.0 / self.n_data
        pos = (x[:, 0] / (x[:, 0] + m * pn + 1e-7)).log()
        neg = ((m * pn) / (x[:, 1:] + m * pn + 1e-7)).log()
        return -(pos.sum(0) + neg.sum()) / x.shape[0]


class NCESoftmaxLoss(nn.Module):
    def forward(self, x):
        label = torch.zeros([x.shape[0]]).cuda().long()
        return nn.functional.cross_entropy(x.squeeze(-1), label)
