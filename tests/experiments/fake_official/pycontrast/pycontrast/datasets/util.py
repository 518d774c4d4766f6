"""A fake PyContrast `datasets/util.py` (the harness's tests): `transforms` (a tiny stand-in for
torchvision's, each class keeping its arguments), `GaussianBlur`, `JigsawCrop`, `StackTransform`,
`RGB2RGB`; `build_contrast_loader` reads ImageNet folders. Not the official code."""

import types

import numpy as np
import torch
from PIL import Image

from .dataset import ImageFolderInstance  # noqa: F401


class _Recorded:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs

    def __call__(self, x):
        return x


class Compose(_Recorded):
    def __call__(self, x):
        for t in self.args[0]:
            x = t(x)
        return x


class RandomResizedCrop(_Recorded):
    def __call__(self, image):
        return image.resize((self.args[0], self.args[0]))


class RandomApply(_Recorded):
    def __call__(self, x):
        return Compose(self.args[0])(x) if torch.rand(()) < self.kwargs["p"] else x


class ToTensor(_Recorded):
    def __call__(self, image):
        return torch.from_numpy(np.asarray(image, np.float32) / 255).permute(2, 0, 1)


class Normalize(_Recorded):
    def __call__(self, x):
        mean, std = (torch.tensor(self.kwargs[k]).view(-1, 1, 1) for k in ("mean", "std"))
        return (x - mean) / std


transforms = types.SimpleNamespace(
    Compose=Compose,
    RandomResizedCrop=RandomResizedCrop,
    RandomHorizontalFlip=_Recorded,
    ColorJitter=_Recorded,
    RandomApply=RandomApply,
    RandomGrayscale=_Recorded,
    ToTensor=ToTensor,
    Normalize=Normalize,
)


class StackTransform(_Recorded):
    def __call__(self, images):
        return torch.stack([self.args[0](image) for image in images])


class JigsawCrop(_Recorded):
    def __call__(self, image):
        a, k = np.asarray(image, np.uint8), self.kwargs
        cell = k["img_size"] // k["n_grid"]
        return [
            Image.fromarray(
                a[i * cell : i * cell + k["crop_size"], j * cell : j * cell + k["crop_size"]]
            )
            for i in range(k["n_grid"])
            for j in range(k["n_grid"])
        ]


class GaussianBlur(_Recorded):
    pass


class RGB2RGB(_Recorded):
    pass


def build_contrast_loader(opt, ngpus_per_node):
    raise AssertionError("reads ImageNet folders: the harness gives its own")
