"""CMC as its authors' `train_CMC.py` trains it (`checkouts.CHECKOUTS['cmc']`, HobbitLong/CMC), on
our colour data at our budget: the official `get_train_loader` (RRC with `crop_low`, flip,
`RGB2Lab`, `Normalize` with the Lab numbers), `MyResNetsCMC('resnet18v1')` (one encoder for L, one
for ab), `NCEAverage` (the two memory banks, K draws, momentum update inside the forward),
`NCECriterion` (or `NCESoftmaxLoss` with `--softmax`), `set_optimizer` and, per epoch,
`util.adjust_learning_rate` then `train`. Imported by `harness.py` (its `METHODS`); the shims are
`checkouts.SHIMS['cmc']`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import random
import sys
import types

import numpy as np

from experiments.official import common

# The one edit that makes train_CMC.py compile under Python 3.7+ (`async` became a keyword).
ASYNC_EDIT = ("index.cuda(async=True)", "index.cuda(non_blocking=True)")


def load_train_cmc(path: str) -> types.ModuleType:
    """`train_CMC.py` of the checkout at `path` as the module `train_CMC`, compiled with
    `ASYNC_EDIT` (its own imports, `dataset`, `util`, `models`, `NCE`, from the checkout)."""
    file = os.path.join(path, "train_CMC.py")
    with open(file) as f:
        source = f.read()
    if source.count(ASYNC_EDIT[0]) != 1:
        raise SystemExit(f"error: {file} has not the one `{ASYNC_EDIT[0]}` this harness edits")
    for name in list(sys.modules):
        if name.split(".")[0] in ("train_CMC", "dataset", "util", "models", "NCE"):
            del sys.modules[name]
    sys.modules.setdefault("tensorboard_logger", types.ModuleType("tensorboard_logger"))
    spec = importlib.util.spec_from_loader("train_CMC", loader=None, origin=file)
    module = importlib.util.module_from_spec(spec)
    module.__file__ = file
    with common.checkout_imports(path):
        code = compile(source.replace(*ASYNC_EDIT), file, "exec")
        exec(code, module.__dict__)  # noqa: S102 - the pinned official file, one edit
    sys.modules["train_CMC"] = module
    return module


class InstanceDataset:
    """Our images as PIL images through `transform`, items `(image, target, index)` as
    `dataset.ImageFolderInstance.__getitem__` returns them (dataset.py:17-35); `root` ignored."""

    def __init__(self, images: np.ndarray, labels: np.ndarray):
        self.images, self.labels = images, labels

    def __call__(self, root, transform=None):
        self.data = common.PILDataset(self.images, self.labels, transform)
        return self

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i):
        image, target = self.data[i]
        return image, target, i


class LoggedSum:
    """The two criteria (`criterion_l`, `criterion_ab`) as `train` calls them, L first then ab
    (train_CMC.py:202-203): every `LOG_EVERY` steps the sum, the loss the optimiser steps on, is
    kept for the curve (measurement only)."""

    def __init__(self, criterion_l, criterion_ab, log_every: int):
        self.curve, self.step, self.l_value, self.log_every = [], 0, 0.0, log_every
        self.criterion_l, self.criterion_ab = criterion_l, criterion_ab

    def loss_l(self, x):
        loss = self.criterion_l(x)
        self.l_value = loss.detach()
        return loss

    def loss_ab(self, x):
        loss = self.criterion_ab(x)
        self.step += 1
        if self.step % self.log_every == 0:
            value = float(self.l_value + loss.detach())
            self.curve.append([self.step, round(value, 5)])
            print(f"step {self.step} | loss {value:.4f}", flush=True)
        return loss


def view_encoder_class():
    """`ViewEncoder(trunk, l2norm)`: a view's network as `ResNetV1.forward` calls it
    (`self.l_to_ab(l, layer)`, models/resnet.py:266-270): `l2norm(trunk(x))` at `layer` 7, the
    only layer `train` asks for."""
    import torch

    class ViewEncoder(torch.nn.Module):
        def __init__(self, trunk, l2norm):
            super().__init__()
            self.trunk, self.l2norm = trunk, l2norm

        def forward(self, x, layer=7):
            if layer != 7:
                raise NotImplementedError(f"layer {layer}: only the head's output (7) is built")
            return self.l2norm(self.trunk(x))

    return ViewEncoder


@contextlib.contextmanager
def cmc_shims(numbers: dict, resnet_module, transforms_module, base_encoder=None):
    """`checkouts.SHIMS['cmc']`'s rows: `.cuda()` the identity, `torch.cuda.synchronize` a
    no-op, `models.resnet.resnet18` our torchvision ResNet-18 (half our width per view, then the
    official `Normalize`), `RandomResizedCrop` at our size. Undone on exit."""
    import torch

    ViewEncoder = view_encoder_class()

    def resnet18(pretrained=False, in_channel=3, width=1, low_dim=128):
        if base_encoder is not None:
            trunk = base_encoder(in_channel, numbers["out_dim"])
        else:
            trunk = common.torchvision_resnet(
                numbers["width"] / 2, numbers["stem"], in_channel, numbers["out_dim"]
            )
        return ViewEncoder(trunk, resnet_module.Normalize(2))

    crop = transforms_module.RandomResizedCrop
    saved = (torch.Tensor.cuda, torch.nn.Module.cuda, torch.cuda.synchronize)
    saved_resnet18 = resnet_module.resnet18
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.nn.Module.cuda = lambda self, *a, **k: self
    torch.cuda.synchronize = lambda *a, **k: None
    resnet_module.resnet18 = resnet18
    transforms_module.RandomResizedCrop = lambda size, scale: crop(numbers["size"], scale=scale)
    try:
        yield
    finally:
        torch.Tensor.cuda, torch.nn.Module.cuda, torch.cuda.synchronize = saved
        resnet_module.resnet18 = saved_resnet18
        transforms_module.RandomResizedCrop = crop


def options(numbers: dict, epochs: int) -> argparse.Namespace:
    """`parse_option`'s namespace (train_CMC.py:38-122) with our numbers: `--model resnet18v1`,
    `--nce_k` our K, `--nce_t` τ, `--nce_m` the bank momentum, `--softmax` for our softmax loss,
    `--crop_low` our RRC's lower scale, `--lr_decay_epochs` our step schedule's epochs."""
    n = numbers
    return argparse.Namespace(
        print_freq=10**9,
        batch_size=n["batch"],
        num_workers=0,
        epochs=epochs,
        learning_rate=n["lr"],
        lr_decay_epochs=list(n["decay_epochs"]),
        lr_decay_rate=n["decay_factor"],
        weight_decay=n["weight_decay"],
        momentum=n["momentum"],
        model="resnet18v1",
        softmax=n["cmc_loss"] == "softmax",
        nce_k=n["num_negatives"],
        nce_t=n["temperature"],
        nce_m=n["bank_momentum"],
        feat_dim=n["out_dim"],
        view="Lab",
        amp=False,
        crop_low=n["crop_low"],
        data_folder="",
    )


def train_cmc(path: str, numbers: dict, base_encoder=None):
    """CMC as `train_CMC.py --model resnet18v1 --view Lab` trains it, with our numbers: its
    `get_train_loader`, `set_model`, `set_optimizer`, then per epoch (from 1)
    `adjust_learning_rate(epoch)` and `train(epoch, ...)`, the last epoch cut at the step count.
    Returns (the `MyResNetsCMC` model, the loss curve of loss_l + loss_ab, {"embed": both views'
    pooled features of un-augmented images through `RGB2Lab` and `Normalize`})."""
    import math

    import torch

    common.import_torchvision()
    n = numbers
    random.seed(n["seed"])
    torch.manual_seed(n["seed"])
    train_cmc_module = load_train_cmc(path)
    images, labels = common.read_subset(n)
    resnet_module = sys.modules["models.resnet"]
    train_cmc_module.ImageFolderInstance = InstanceDataset(images, labels)
    with cmc_shims(n, resnet_module, train_cmc_module.transforms, base_encoder):
        per_epoch = math.ceil(len(images) / n["batch"])  # the loader keeps the last batch
        epochs = math.ceil(n["steps"] / per_epoch)
        args = options(n, epochs)
        train_loader, n_data = train_cmc_module.get_train_loader(args)
        model, contrast, criterion_ab, criterion_l = train_cmc_module.set_model(args, n_data)
        logged = LoggedSum(criterion_l, criterion_ab, common.LOG_EVERY)
        optimizer = train_cmc_module.set_optimizer(args, model)
        for epoch in range(1, epochs + 1):  # main(), train_CMC.py:270-280
            train_cmc_module.adjust_learning_rate(epoch, args, optimizer)
            batches = min(per_epoch, n["steps"] - (epoch - 1) * per_epoch)
            train_cmc_module.train(
                epoch,
                common.Cut(train_loader, batches),
                model,
                contrast,
                logged.loss_l,
                logged.loss_ab,
                optimizer,
                args,
            )
    to_lab = train_cmc_module.RGB2Lab()
    normalize = train_loader.dataset.data.transform.transforms[-1]  # the official Lab Normalize
    to_tensor = train_cmc_module.transforms.ToTensor()

    def embed(batch: np.ndarray) -> np.ndarray:
        from PIL import Image

        x = torch.stack([normalize(to_tensor(to_lab(Image.fromarray(im)))) for im in batch])
        x = x.float()
        views = model.encoder.module  # `nn.DataParallel` of `ResNetV1` (models/resnet.py:328)
        trunks = (views.l_to_ab.trunk, views.ab_to_l.trunk)
        out = []
        model.eval()
        with torch.no_grad():
            for trunk, view in zip(trunks, torch.split(x, [1, 2], dim=1), strict=True):
                fc, trunk.fc = trunk.fc, torch.nn.Identity()
                out.append(trunk(view))
                trunk.fc = fc
        return torch.cat(out, 1).numpy()

    return model, logged.curve, {"encoder": None, "embed": embed}
