"""A plain-PyTorch ResNet with torchvision's module names and padding (reference for the tests).

Identical to `torchvision.models.resnet` (v1.5: stride on the Bottleneck's 3x3 conv) up to the
global average pool, without `fc`; `stem='cifar'` uses a 3x3 stride-1 conv and no max-pool
(`maxpool` is an `nn.Identity`, so the state_dict keys are the torchvision ones). Import only where
torch is installed.
"""

import torch
from torch import nn

STAGES = {
    18: ("basic", (2, 2, 2, 2)),
    34: ("basic", (3, 4, 6, 3)),
    50: ("bottleneck", (3, 4, 6, 3)),
}


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, 1, 0, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, 1, 0, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class TorchResNet(nn.Module):
    """torchvision ResNet-{18,34,50} trunk → `[N, D]` pooled features (input NCHW)."""

    def __init__(
        self, depth: int = 50, stem: str = "imagenet", width: float = 1.0, in_chans: int = 3
    ):
        super().__init__()
        kind, blocks = STAGES[depth]
        block = BasicBlock if kind == "basic" else Bottleneck
        base = int(round(64 * width))
        if stem == "imagenet":
            self.conv1 = nn.Conv2d(in_chans, base, 7, 2, 3, bias=False)
            self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        else:  # 'cifar': 3x3/1; 'stride2': 3x3/2; neither max-pools
            self.conv1 = nn.Conv2d(in_chans, base, 3, 2 if stem == "stride2" else 1, 1, bias=False)
            self.maxpool = nn.Identity()
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU(inplace=True)
        self.inplanes = base
        for i, n in enumerate(blocks):
            setattr(
                self, f"layer{i + 1}", self._make_layer(block, base * 2**i, n, 1 if i == 0 else 2)
            )
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))

    def _make_layer(self, block, planes: int, n: int, stride: int) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, n)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return torch.flatten(self.avgpool(x), 1)
