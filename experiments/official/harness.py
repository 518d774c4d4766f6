"""Trains an official implementation from its pinned checkout (`checkouts.py`) on our data at our
budget, and writes the frozen features our probe and kNN score. Runs with the official venv's
python (torch, torchvision; never ssl_jax's requirements):

    python3 -m venv ../official_venv
    ../official_venv/bin/pip install -r experiments/official/requirements-official.txt
    ../official_venv/bin/pip install --no-deps torchvision==0.28.0

    ../official_venv/bin/python experiments/official/harness.py --method=mocov2 \\
        --numbers="$(cat numbers.json)" --out=DIR [--official-root=../official]

`--numbers` (JSON, written by `experiments/official/runner.py` from our config, so both sides read
one recipe): the images (`fashion_dir`, `train_subset`, `size`, `channels`, `mean`, `std`), the
recipe's ops, the network (`width`, `stem`, `feature_dim`, `hidden`, `out_dim`), the method's
numbers (`queue`, `momentum_ema`, `temperature`), the optimiser (`batch`, `steps`, `lr`,
`weight_decay`, `momentum`) and the `seed`. The official code runs as its trainer calls it; only
what cannot run on a CPU in one process is replaced (`checkouts.SHIMS`, each with its file:line).

Out: `DIR/features.npz` (`train_x`, `train_y`: all 60,000 training images; `test_x`, `test_y`:
the 10,000 test images; the query encoder's pooled backbone in eval mode) and `DIR/run.json` (the
loss every 20 steps, steps, seconds, CPU seconds, versions).

torchvision 0.28.0 as pip finds it for torch 2.13.0+cpu is a CUDA build whose C ops cannot load;
its models and transforms are Python, so the C ops' meta registrations are skipped
(`import_torchvision`), as `experiments/peer.py` does.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import importlib
import json
import math
import os
import random
import resource
import sys
import time
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from experiments.official import checkouts  # noqa: E402

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


def topk_accuracy(output, target, topk=(1,)):
    """`main_moco.accuracy` (main_moco.py:384-398) with `.reshape(-1)` where it calls `.view(-1)`
    on a slice of a transposed tensor, which torch 2.x refuses; the instance-discrimination
    accuracy it returns is only printed."""
    import torch

    with torch.no_grad():
        _, pred = output.topk(max(topk), 1, True, True)
        correct = pred.t().eq(target.view(1, -1).expand_as(pred.t()))
        return [
            correct[:k].reshape(-1).float().sum(0, keepdim=True) * (100.0 / len(target))
            for k in topk
        ]


@contextlib.contextmanager
def moco_shims(builder, main_moco=None):
    """`checkouts.SHIMS['moco']`'s rows: `.cuda()` is the identity, the all-gather is the
    process's own tensor, the shuffle's broadcast a no-op on rank 0, `accuracy` reshapes."""
    import torch

    if main_moco is not None:
        main_moco.accuracy = topk_accuracy

    saved = (
        torch.Tensor.cuda,
        torch.nn.Module.cuda,
        builder.concat_all_gather,
        torch.distributed.broadcast,
        torch.distributed.get_rank,
    )
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.nn.Module.cuda = lambda self, *a, **k: self
    builder.concat_all_gather = lambda tensor: tensor
    torch.distributed.broadcast = lambda *a, **k: None
    torch.distributed.get_rank = lambda *a, **k: 0
    try:
        yield
    finally:
        (
            torch.Tensor.cuda,
            torch.nn.Module.cuda,
            builder.concat_all_gather,
            torch.distributed.broadcast,
            torch.distributed.get_rank,
        ) = saved


class PILDataset:
    """uint8 [N, H, W] images as PIL 'L' images through `transform` (the official
    `TwoCropsTransform`), with their labels: what `datasets.ImageFolder` gives `main_moco.py`."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, transform):
        from PIL import Image

        self.images = [Image.fromarray(x, mode="L") for x in images]
        self.labels = labels
        self.transform = transform

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i):
        return self.transform(self.images[i]), int(self.labels[i])


class Cut:
    """The first `n` batches of a loader (the last epoch of a step budget), with a length."""

    def __init__(self, loader, n: int):
        self.loader, self.n = loader, n

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        for i, batch in enumerate(self.loader):
            if i == self.n:
                return
            yield batch


class LoggedLoss:
    """The official criterion (`nn.CrossEntropyLoss`, main_moco.py:193), its value kept every
    `LOG_EVERY` steps for the loss curve (measurement only)."""

    def __init__(self, criterion):
        self.criterion, self.step, self.curve = criterion, 0, []

    def __call__(self, output, target):
        loss = self.criterion(output, target)
        self.step += 1
        if self.step % LOG_EVERY == 0:
            self.curve.append([self.step, round(float(loss.detach()), 5)])
            print(f"step {self.step} | loss {float(loss.detach()):.4f}", flush=True)
        return loss


def train_mocov2(path: str, numbers: dict, base_encoder=None):
    """MoCo v2 as `main_moco.py` trains it (`--mlp --aug-plus --cos`, our numbers): the official
    `moco.builder.MoCo`, `moco.loader.TwoCropsTransform`, `main_moco.train` and
    `main_moco.adjust_learning_rate` per epoch. Returns (the MoCo module, the loss curve)."""
    import torch

    sys.path.insert(0, path)
    try:
        builder = importlib.import_module("moco.builder")
        loader = importlib.import_module("moco.loader")
        main_moco = importlib.import_module("main_moco")
    finally:
        sys.path.remove(path)
    n = numbers
    seed = n["seed"]
    random.seed(seed)  # main_moco.py:105-107
    torch.manual_seed(seed)
    if base_encoder is None:

        def base_encoder(num_classes):
            return torchvision_resnet(n["width"], n["stem"], n["channels"], num_classes)

    images, labels = read_fashion(n["fashion_dir"], "train")
    if n["train_subset"]:
        images, labels = images[: n["train_subset"]], labels[: n["train_subset"]]
    transform = loader.TwoCropsTransform(ops_to_transforms(n["ops"], n["mean"], n["std"]))
    dataset = PILDataset(images, labels, transform)
    generator = torch.Generator().manual_seed(seed)
    train_loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=n["batch"],
        shuffle=True,
        num_workers=0,
        drop_last=True,
        generator=generator,
    )
    with moco_shims(builder, main_moco):
        model = builder.MoCo(
            base_encoder, n["out_dim"], n["queue"], n["momentum_ema"], n["temperature"], True
        )
        if model.encoder_q.fc[0].out_features != n["hidden"]:
            raise SystemExit(
                f"error: the official --mlp head is {model.encoder_q.fc[0].out_features} wide, "
                f"our config's {n['hidden']}: give the config a hidden width of the feature dim"
            )
        criterion = LoggedLoss(torch.nn.CrossEntropyLoss().cuda())
        optimizer = torch.optim.SGD(
            model.parameters(), n["lr"], momentum=n["momentum"], weight_decay=n["weight_decay"]
        )  # main_moco.py:195-197
        per_epoch = len(train_loader)
        epochs = math.ceil(n["steps"] / per_epoch)
        args = argparse.Namespace(
            lr=n["lr"], cos=True, epochs=epochs, schedule=[], gpu=None, print_freq=10**9
        )
        for epoch in range(epochs):  # main_moco.py:260-266
            main_moco.adjust_learning_rate(optimizer, epoch, args)
            batches = min(per_epoch, n["steps"] - epoch * per_epoch)
            main_moco.train(Cut(train_loader, batches), model, criterion, optimizer, epoch, args)
    return model, criterion.curve


def features(encoder, numbers: dict, split: str, batch: int = 500):
    """The encoder's pooled backbone (`fc` → identity) in eval mode on a whole split, the images
    only converted and normalised (no augmentation): `[N, D]` float32 and labels."""
    import torch

    images, labels = read_fashion(numbers["fashion_dir"], split)
    mean = torch.tensor(numbers["mean"]).view(1, -1, 1, 1)
    std = torch.tensor(numbers["std"]).view(1, -1, 1, 1)
    fc, encoder.fc = encoder.fc, torch.nn.Identity()
    encoder.eval()
    out = []
    with torch.no_grad():
        for start in range(0, len(images), batch):
            x = torch.from_numpy(images[start : start + batch].copy()).float().div(255).unsqueeze(1)
            out.append(encoder((x - mean) / std).numpy().astype(np.float32))
    encoder.fc = fc
    return np.concatenate(out), labels


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


METHODS = {"mocov2": ("moco", train_mocov2)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--method", choices=sorted(METHODS), required=True)
    parser.add_argument("--numbers", required=True, help="the recipe as JSON (runner.py)")
    parser.add_argument("--out", required=True, help="folder for features.npz and run.json")
    parser.add_argument("--official-root", default="", help="where the checkouts are")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args(argv)
    import torch

    import_torchvision()  # before the official modules import it
    torch.set_num_threads(args.threads)
    checkout, train = METHODS[args.method]
    path = checkouts.check(checkout, args.official_root)
    numbers = json.loads(args.numbers)
    os.makedirs(args.out, exist_ok=True)
    t0, cpu0 = time.time(), cpu_seconds()
    model, curve = train(path, numbers)
    pretrain_s, pretrain_cpu_s = time.time() - t0, cpu_seconds() - cpu0
    train_x, train_y = features(model.encoder_q, numbers, "train")
    test_x, test_y = features(model.encoder_q, numbers, "test")
    tmp = os.path.join(args.out, "features.tmp.npz")
    np.savez(tmp, train_x=train_x, train_y=train_y, test_x=test_x, test_y=test_y)
    os.replace(tmp, os.path.join(args.out, "features.npz"))
    import torchvision

    run = dict(
        loss_curve=curve,
        steps=numbers["steps"],
        pretrain_s=round(pretrain_s, 1),
        pretrain_cpu_s=round(pretrain_cpu_s, 1),
        versions=f"torch {torch.__version__}, torchvision {torchvision.__version__}",
    )
    with open(os.path.join(args.out, "run.json"), "w") as f:
        json.dump(run, f, indent=1)
    print(f"official {args.method}: {numbers['steps']} steps in {pretrain_s:.0f} s", flush=True)


if __name__ == "__main__":
    main()
