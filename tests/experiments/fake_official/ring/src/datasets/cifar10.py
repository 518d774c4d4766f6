"""A fake `src/datasets/cifar10.py` (the harness's tests): items with their index, one view or
two. Not the official code."""

import torch.utils.data as data


class CIFAR10(data.Dataset):
    def __init__(self, root, train=True, image_transforms=None):
        raise RuntimeError("downloads CIFAR-10: the harness builds this around its own images")

    def __getitem__(self, index):
        img, label = self.dataset[index]
        return index, img.float(), label

    def __len__(self):
        return len(self.dataset)


class CIFAR10TwoViews(CIFAR10):
    def __getitem__(self, index):
        img, label = self.dataset[index]
        img2, _ = self.dataset[index]
        return index, img.float(), img2.float(), label
