"""A fake PyContrast `networks/build_backbone.py` (the harness's tests): `RGBSingleHead` (encoder
from `model_dict`, the width parsed from the name, the 'mlp' head), `RGBMultiHeads` (a jigsaw
head over 9 patches) and `build_model`. Not the official code."""

import torch.nn as nn
import torch.nn.functional as F

model_dict = {}


class RGBSingleHead(nn.Module):
    def __init__(self, name="resnet50", head="linear", feat_dim=128):
        super().__init__()
        name, width = self._parse_width(name)
        dim_in = int(2048 * width)
        self.width = width
        self.encoder = model_dict[name](width=width)
        self.head = nn.Sequential(nn.Linear(dim_in, dim_in), nn.ReLU(), nn.Linear(dim_in, feat_dim))

    @staticmethod
    def _parse_width(name):
        return name, 1

    def forward(self, x, mode=0):
        return F.normalize(self.head(self.encoder(x)), dim=1)


class RGBMultiHeads(RGBSingleHead):
    def __init__(self, name="resnet50", head="linear", feat_dim=128):
        super().__init__(name, head, feat_dim)
        dim_in = int(2048 * self.width)
        self.head_jig = nn.Sequential(nn.Linear(dim_in, feat_dim))
        self.fc2 = nn.Linear(9 * feat_dim, feat_dim)

    def forward(self, x, x_jig=None, mode=0):
        q = F.normalize(self.head(self.encoder(x)), dim=1)
        if mode == 1:
            return q
        jig = self.head_jig(self.encoder(x_jig)).view(x.shape[0], -1)
        return q, F.normalize(self.fc2(jig), dim=1)


def build_model(opt):
    cls = RGBMultiHeads if opt.jigsaw else RGBSingleHead
    return cls(opt.arch, opt.head, opt.feat_dim), cls(opt.arch, opt.head, opt.feat_dim)
