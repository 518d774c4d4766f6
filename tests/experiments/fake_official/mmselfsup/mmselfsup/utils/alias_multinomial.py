"""Fake `AliasMethod`: uniform draws, moved by `.cuda()`."""

import torch


class AliasMethod:
    def __init__(self, probs):
        self.prob = probs / probs.sum()

    def cuda(self):
        self.prob = self.prob.cuda()

    def draw(self, n):
        return torch.multinomial(self.prob, n, replacement=True)
