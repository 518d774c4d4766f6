"""What every official trainer here shares (`harness.py` runs them): our images (Fashion-MNIST's
IDX files or a colour set's arrays, `runner.write_images`), our recipe as torchvision's transform
classes, our network as torchvision's ResNet-18, the seeded loader of one process, the loss curve,
the import of an official checkout's modules, and the frozen features our probe and kNN score.
Runs with the official venv's python (torch, torchvision; never ssl_jax's requirements)."""

from __future__ import annotations

import contextlib
import gzip
import importlib
import importlib.machinery
import os
import random
import resource
import sys
import types

import numpy as np

LOG_EVERY = 20


def import_torchvision():
    sys.modules.setdefault(
        "torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations")
    )
    import torchvision

    return torchvision


def read_fashion(directory: str, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST images [N, 28, 28] uint8 and labels of 'train' / 'test' (IDX files)."""
    prefix = "train" if split == "train" else "t10k"
    with gzip.open(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    return images, labels


def ops_to_transforms(ops, mean, std, transforms=None):
    """Our recipe's ops (`ssl_jax.data.recipes`) as torchvision's transform classes, in their
    order, then ToTensor and Normalize: what `main_moco.py:225-235` builds from its own numbers."""
    transforms = transforms or import_torchvision().transforms
    out = []
    for op in ops:
        kind = op["op"]
        if kind == "random_resized_crop":
            out.append(transforms.RandomResizedCrop(op["size"], scale=tuple(op["scale"])))
        elif kind == "horizontal_flip":
            out.append(transforms.RandomHorizontalFlip(p=op.get("p", 0.5)))
        elif kind == "color_jitter":
            jitter = transforms.ColorJitter(
                op.get("brightness", 0),
                op.get("contrast", 0),
                op.get("saturation", 0),
                op.get("hue", 0),
            )
            out.append(transforms.RandomApply([jitter], p=op.get("p", 1.0)))
        elif kind == "grayscale":
            out.append(transforms.RandomGrayscale(p=op["p"]))
        else:
            raise SystemExit(f"error: recipe op {kind!r} has no torchvision transform here")
    out += [transforms.ToTensor(), transforms.Normalize(mean=list(mean), std=list(std))]
    return transforms.Compose(out)


def torchvision_resnet(width: float, stem: str, channels: int, num_classes: int):
    """torchvision's resnet18 with our stem and input channels and its stages rebuilt by its own
    `_make_layer` at `width` (the export's layout), torchvision's initialisation."""
    torchvision = import_torchvision()
    import torch.nn as nn
    from torchvision.models.resnet import BasicBlock

    m = torchvision.models.resnet18(num_classes=num_classes)
    base = int(round(64 * width))
    k, s, p = {"imagenet": (7, 2, 3), "cifar": (3, 1, 1), "stride2": (3, 2, 1)}[stem]
    m.conv1 = nn.Conv2d(channels, base, kernel_size=k, stride=s, padding=p, bias=False)
    m.bn1 = nn.BatchNorm2d(base)
    if stem != "imagenet":
        m.maxpool = nn.Identity()
    m.inplanes = base
    m.layer1 = m._make_layer(BasicBlock, base, 2)
    m.layer2 = m._make_layer(BasicBlock, base * 2, 2, stride=2)
    m.layer3 = m._make_layer(BasicBlock, base * 4, 2, stride=2)
    m.layer4 = m._make_layer(BasicBlock, base * 8, 2, stride=2)
    m.fc = nn.Linear(base * 8, num_classes)
    for (
        module
    ) in m.modules():  # torchvision ResNet.__init__'s initialisation, for the rebuilt parts
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(module, nn.BatchNorm2d):
            nn.init.constant_(module.weight, 1)
            nn.init.constant_(module.bias, 0)
    return m


class PILDataset:
    """uint8 [N, H, W] (or [N, H, W, 3]) images as PIL 'L' (or 'RGB') images through `transform` (the official
    `TwoCropsTransform`), with their labels: what `datasets.ImageFolder` gives `main_moco.py`."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, transform):
        from PIL import Image

        self.images = [Image.fromarray(x, mode="L" if x.ndim == 2 else "RGB") for x in images]
        self.labels = labels
        self.transform = transform

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i):
        return self.transform(self.images[i]), int(self.labels[i])


class StoredViews:
    """Views our input pipeline made beforehand (`runner.write_our_views`: `[K, N, H, W]` uint8), in
    the place of PIL images through the recipe's transform classes (a `+ourviews` cell, which asks
    whether the probe follows the augmentations' implementation): image i's r-th read returns its
    view r through `transform` (ToTensor, Normalize); a read past the K views is an error."""

    def __init__(self, views: np.ndarray, labels: np.ndarray, transform):
        self.views, self.labels, self.transform = views, labels, transform
        self.reads = np.zeros(views.shape[1], np.int64)

    def __len__(self) -> int:
        return self.views.shape[1]

    def __getitem__(self, i):
        from PIL import Image

        r = int(self.reads[i])
        if r >= len(self.views):
            raise RuntimeError(f"image {i} read {r + 1} times; {len(self.views)} views were made")
        self.reads[i] += 1
        view = Image.fromarray(np.ascontiguousarray(self.views[r, i]), mode="L")
        return self.transform(view), int(self.labels[i])


class Cut:
    """The first `n` batches of a loader (the last epoch of a step budget), with a length: `n`,
    or `length` where the trainer reads it as the epoch's (ReSSL's per-iteration lr)."""

    def __init__(self, loader, n: int, length: int = 0):
        self.loader, self.n, self.length = loader, n, length or n

    def __len__(self) -> int:
        return self.length

    def __iter__(self):
        for i, batch in enumerate(self.loader):
            if i == self.n:
                return
            yield batch


class LoggedLoss:
    """The official criterion (`nn.CrossEntropyLoss`, main_moco.py:193), its value kept every
    `LOG_EVERY` steps for the loss curve (measurement only). `extra`, when given, returns the term
    the trainer adds to the criterion's loss (JCL's `jcl_loss`, main_moco.py:345): the curve is then
    of the sum, the loss the optimiser steps on."""

    def __init__(self, criterion, extra=None):
        self.criterion, self.extra, self.step, self.curve = criterion, extra, 0, []

    def __call__(self, output, target):
        loss = self.criterion(output, target)
        self.step += 1
        if self.step % LOG_EVERY == 0:
            value = float(loss.detach()) + (float(self.extra()) if self.extra else 0.0)
            self.curve.append([self.step, round(value, 5)])
            print(f"step {self.step} | loss {value:.4f}", flush=True)
        return loss


class CheckoutFinder:
    """Finds a top-level module in one checkout's folder (`checkout_imports`); a submodule is left
    to its package's own `__path__`."""

    def __init__(self, path: str):
        self.path = path

    def find_spec(self, name, path=None, target=None):
        if path is not None:
            return None
        return importlib.machinery.PathFinder.find_spec(name, [self.path])


@contextlib.contextmanager
def checkout_imports(path: str):
    """Within the block, top-level imports look in the checkout at `path` first, as if it led
    `sys.path` (the official modules import one another by their bare names); `sys.path` itself
    is left as it is. The finder goes just before the path finder in `sys.meta_path`, where a
    `sys.path` entry is read."""
    finder = CheckoutFinder(path)
    sys.meta_path.insert(sys.meta_path.index(importlib.machinery.PathFinder), finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def import_official(path: str, *names: str, stubs=None) -> list[types.ModuleType]:
    """The modules `names` from the checkout at `path`. MoCo's and JCL's checkouts both have a
    `moco` package and a `main_moco`: those of another checkout are dropped from `sys.modules`
    first, so each name is this checkout's. `stubs` ({module name: module}) are put in
    `sys.modules` after that, in place of official modules that cannot import here (`SHIMS`)."""
    tops = {name.split(".")[0] for name in names}
    for name in list(sys.modules):
        if name.split(".")[0] in tops:
            del sys.modules[name]
    sys.modules.update(stubs or {})
    with checkout_imports(path):
        return [importlib.import_module(name) for name in names]


def read_split(numbers: dict, split: str) -> tuple[np.ndarray, np.ndarray]:
    """A split's uint8 images and labels: `[N, H, W, 3]` from `numbers["images_file"]` (an .npz
    of `train_x`, `train_y`, `test_x`, `test_y` that `runner.write_images` made from our data
    set: color_fashion_mnist), else Fashion-MNIST's `[N, 28, 28]` from `fashion_dir`."""
    if numbers.get("images_file"):
        with np.load(numbers["images_file"]) as f:
            return f[f"{split}_x"], f[f"{split}_y"].astype(np.int64)
    return read_fashion(numbers["fashion_dir"], split)


def read_subset(numbers: dict) -> tuple[np.ndarray, np.ndarray]:
    """The training images the grid trains on (the first `train_subset`, all when 0)."""
    images, labels = read_split(numbers, "train")
    if numbers["train_subset"]:
        images, labels = images[: numbers["train_subset"]], labels[: numbers["train_subset"]]
    return images, labels


def seeded_loader(numbers: dict, transform, wrap=None):
    """`main_moco.py`'s seeding (`random.seed`, `torch.manual_seed`) and its DataLoader as one
    process runs it: our subset as PIL images through `transform` (the data set passed through
    `wrap` when given: the item layout an official trainer reads), shuffled with a seeded
    generator, drop_last (`SHIMS`' data-loading rows)."""
    import torch

    n = numbers
    random.seed(n["seed"])  # main_moco.py:105-107 (MoCo), :118-120 (JCL)
    torch.manual_seed(n["seed"])
    images, labels = read_subset(n)
    return torch.utils.data.DataLoader(
        (wrap or (lambda dataset: dataset))(PILDataset(images, labels, transform)),
        batch_size=n["batch"],
        shuffle=True,
        num_workers=0,
        drop_last=True,
        generator=torch.Generator().manual_seed(n["seed"]),
    )


def encoder_factory(numbers: dict, base_encoder=None):
    """`base_encoder(num_classes)` as the official builders call it: ours (`torchvision_resnet` at
    the config's width and stem) unless a test gives one."""
    if base_encoder is not None:
        return base_encoder

    def make(num_classes):
        return torchvision_resnet(
            numbers["width"], numbers["stem"], numbers["channels"], num_classes
        )

    return make


def sgd(model, numbers: dict):
    """The official optimiser (MoCo main_moco.py:195-197, JCL main_moco.py:224-226)."""
    import torch

    n = numbers
    return torch.optim.SGD(
        model.parameters(), n["lr"], momentum=n["momentum"], weight_decay=n["weight_decay"]
    )


def features(encoder, numbers: dict, split: str, batch: int = 500, embed=None):
    """The encoder's pooled backbone (`fc` → identity) in eval mode on a whole split, the images
    only converted and normalised (no augmentation): `[N, D]` float32 and labels. `embed` (uint8
    images → features), when a trainer gives one, in its place (CMC: both views' encoders)."""
    import torch

    images, labels = read_split(numbers, split)
    if embed is not None:
        out = [embed(images[start : start + batch]) for start in range(0, len(images), batch)]
        return np.concatenate(out).astype(np.float32), labels
    mean = torch.tensor(numbers["mean"]).view(1, -1, 1, 1)
    std = torch.tensor(numbers["std"]).view(1, -1, 1, 1)
    fc, encoder.fc = encoder.fc, torch.nn.Identity()
    encoder.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(images), batch):
            x = torch.from_numpy(images[start : start + batch].copy()).float().div(255)
            x = x.unsqueeze(1) if x.ndim == 3 else x.permute(0, 3, 1, 2)
            out.append(encoder((x - mean) / std).numpy().astype(np.float32))
    encoder.fc = fc
    return np.concatenate(out), labels


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
