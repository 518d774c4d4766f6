"""A fake `network/backbone.py` (the harness's tests): `BackBone` (trunk from `backbone_dict`,
`ProjectionHead`-like head of `hidden_dim`, L2-normalised output)."""

import torch.nn as nn
import torch.nn.functional as F

backbone_dict = {"resnet18": None}
dim_dict = {"resnet18": 512}


class BackBone(nn.Module):
    def __init__(self, backbone="resnet50", hidden_dim=4096, dim=512):
        super().__init__()
        self.net = backbone_dict[backbone]()
        self.head = nn.Sequential(
            nn.Linear(dim_dict[backbone], hidden_dim), nn.ReLU(), nn.Linear(hidden_dim, dim)
        )

    def forward(self, x):
        return F.normalize(self.head(self.net(x)))
