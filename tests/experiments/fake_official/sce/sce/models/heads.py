"""A fake `sce.models.heads` (the harness's tests): `MLPHead` with the official flags."""

import torch.nn as nn


class MLPHead(nn.Module):
    def __init__(self, input_dim, hidden_dims, output_dim, norm_layer=None, **flags):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(input_dim, hidden_dims[0], bias=False),
            nn.BatchNorm1d(hidden_dims[0]),
            nn.ReLU(),
            nn.Linear(hidden_dims[0], output_dim),
        )

    def forward(self, x):
        return self.layers(x)
