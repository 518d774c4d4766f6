"""Fake `MoCoV2Neck`: a 1-tuple of a map in, pooled, fc-relu-fc, a 1-list out."""

import torch.nn as nn
from mmcv.runner import BaseModule

from ..builder import NECKS


@NECKS.register_module()
class MoCoV2Neck(BaseModule):
    def __init__(self, in_channels, hid_channels, out_channels, with_avg_pool=True, init_cfg=None):
        super().__init__(init_cfg)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.mlp = nn.Sequential(
            nn.Linear(in_channels, hid_channels), nn.ReLU(), nn.Linear(hid_channels, out_channels)
        )

    def forward(self, x):
        assert len(x) == 1
        return [self.mlp(self.avgpool(x[0]).flatten(1))]
