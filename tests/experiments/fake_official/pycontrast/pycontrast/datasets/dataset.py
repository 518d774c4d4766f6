"""A fake PyContrast `datasets/dataset.py` (the harness's tests): `ImageFolderInstance` over a
stand-in for torchvision's `ImageFolder` (its folder scan through `find_classes` and
`make_dataset`, a file loader). Not the official code."""


class ImageFolder:
    def __init__(self, root, transform=None, target_transform=None):
        self.classes, self.class_to_idx = self.find_classes(root)
        self.samples = self.make_dataset(root, class_to_idx=self.class_to_idx, extensions=None)
        self.imgs, self.transform, self.loader = self.samples, transform, open

    def find_classes(self, directory):
        raise AssertionError("scans a folder")

    @staticmethod
    def make_dataset(directory, class_to_idx, extensions=None):
        raise AssertionError("scans a folder")

    def __len__(self):
        return len(self.samples)


class ImageFolderInstance(ImageFolder):
    def __init__(
        self, root, transform=None, target_transform=None, two_crop=False, jigsaw_transform=None
    ):
        super().__init__(root, transform, target_transform)
        self.two_crop, self.jigsaw_transform = two_crop, jigsaw_transform

    def __getitem__(self, index):
        import torch

        path, _ = self.imgs[index]
        image = self.loader(path)
        img = self.transform(image)
        if self.two_crop:
            img = torch.cat([img, self.transform(image)], dim=0)
        if self.jigsaw_transform is not None:
            return img, index, self.jigsaw_transform(image)
        return img, index
