"""A fake `src/models/resnet2.py` (the harness's tests): `CustomResNet` around
`models.resnet18(pretrained=False)` without its `fc`, with an MLP head. Not the official code."""

import torch.nn as nn

models = None  # the official file imports torchvision.models here; the harness replaces it


class CustomResNet(nn.Module):
    def __init__(self, base_model, out_dim, conv3x3=False):
        super().__init__()
        resnet = {
            "resnet18": models.resnet18(pretrained=False),
            "resnet50": models.resnet50(pretrained=False),
        }[base_model]
        width = resnet.fc.in_features
        self.features = nn.Sequential(*list(resnet.children())[:-1])
        self.l1, self.l2 = nn.Linear(width, width), nn.Linear(width, out_dim)

    def forward(self, x):
        h = self.features(x).flatten(1)
        return h, self.l2(self.l1(h).relu())
