"""A fake `models/resnet.py`: `Normalize`, `resnet18(in_channel, width)`, `ResNetV1` (L and ab
encoders, `forward(x, layer)`) in `MyResNetsCMC`'s `nn.DataParallel`. Not the official code."""

import torch
from torch import nn


class Normalize(nn.Module):
    def __init__(self, power=2):
        super().__init__()
        self.power = power

    def forward(self, x):
        return x.div(x.pow(self.power).sum(1, keepdim=True).pow(1.0 / self.power))


def resnet18(pretrained=False, **kwargs):
    raise RuntimeError("the fake's ResNet-18 is never built: the harness stands in for it")


class ResNetV1(nn.Module):
    def __init__(self, name="resnet50"):
        super().__init__()
        self.l_to_ab = resnet18(in_channel=1, width=0.5)
        self.ab_to_l = resnet18(in_channel=2, width=0.5)

    def forward(self, x, layer=7):
        l, ab = torch.split(x, [1, 2], dim=1)  # noqa: E741
        return self.l_to_ab(l, layer), self.ab_to_l(ab, layer)


class MyResNetsCMC(nn.Module):
    def __init__(self, name="resnet50v1"):
        super().__init__()
        self.encoder = nn.DataParallel(ResNetV1(name[:-2]))

    def forward(self, x, layer=7):
        return self.encoder(x, layer)
