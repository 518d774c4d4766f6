"""A fake `src/objectives/memory.py` (the harness's tests): the bank, its rows' init in
`_create` (uniform, as the official one), `at_idxs`, `update`. Not the official code."""

import torch
import torch.nn as nn

from src.utils.utils import l2_normalize


class MemoryBank(nn.Module):
    def __init__(self, size, dim):
        super().__init__()
        self.size, self.dim = size, dim
        self.register_buffer("_bank", self._create())

    def _create(self):
        return l2_normalize(torch.rand(self.size, self.dim) * 2 - 1)

    def as_tensor(self):
        return self._bank

    def at_idxs(self, idxs):
        return self._bank[idxs]

    def update(self, indices, data_memory):
        self._bank = self._bank.index_copy(0, indices, data_memory.detach())
