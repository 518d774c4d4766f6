"""A fake `NCE/NCEAverage.py`: two banks, K uniform draws with the own index first, the scores
of L against the ab bank and of ab against the L bank, the momentum update in the forward.
Not the official code."""

import torch
from torch import nn


class NCEAverage(nn.Module):
    def __init__(self, inputSize, outputSize, K, T=0.07, momentum=0.5, use_softmax=False):
        super().__init__()
        self.K, self.T, self.momentum, self.use_softmax = K, T, momentum, use_softmax
        self.register_buffer(
            "memory_l", nn.functional.normalize(torch.randn(outputSize, inputSize), dim=1)
        )
        self.register_buffer(
            "memory_ab", nn.functional.normalize(torch.randn(outputSize, inputSize), dim=1)
        )
        self.unigrams = torch.ones(outputSize).cuda()  # the alias sampler's `.cuda()`

    def forward(self, l, ab, y):  # noqa: E741
        idx = torch.randint(len(self.memory_l), (l.shape[0], self.K + 1))
        idx[:, 0] = y
        out_l = torch.einsum("bkd,bd->bk", self.memory_ab[idx], l)[..., None] / self.T
        out_ab = torch.einsum("bkd,bd->bk", self.memory_l[idx], ab)[..., None] / self.T
        if not self.use_softmax:
            out_l, out_ab = out_l.exp() / len(self.memory_l), out_ab.exp() / len(self.memory_l)
        with torch.no_grad():
            for bank, feat in ((self.memory_l, l), (self.memory_ab, ab)):
                new = self.momentum * bank[y] + (1 - self.momentum) * feat
                bank[y] = nn.functional.normalize(new, dim=1)
        return out_l, out_ab
