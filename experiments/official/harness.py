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
numbers (`queue`, `momentum_ema`, `temperature`; JCL's `num_keys` M' and `lam` λ; SCE's and
ReSSL's `view_ops` (weak, strong), `temperature_m`, `key_bn_splits`, SCE's `coeff`), the
optimiser (`batch`, `steps`, `lr`, `weight_decay`, `momentum`) and the `seed`. The official code runs as its trainer calls it; only
what cannot run on a CPU in one process is replaced (`checkouts.SHIMS`, each with its file:line).

Out: `DIR/features.npz` (`train_x`, `train_y`: all 60,000 training images; `test_x`, `test_y`:
the 10,000 test images; the online network's pooled backbone in eval mode: MoCo's and JCL's
`encoder_q`, the trainer's `encoder` where it names one) and `DIR/run.json` (the
loss every 20 steps, steps, seconds, CPU seconds, versions; JCL's λ of each epoch).

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

from experiments.official import (  # noqa: E402
    checkouts,
    train_cmc,
    train_infomin,
    train_interclr,
    train_ressl,
    train_sce,
)

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
    """`checkouts.SHIMS['moco']`'s and `['jcl']`'s rows on the module that builds the model (MoCo's
    `moco.builder`, JCL's `moco.moco_unlimit_key_default`, each with its own `concat_all_gather`
    name): `.cuda()` is the identity, the all-gather is the process's own tensor, the shuffle's
    broadcast a no-op on rank 0, `accuracy` reshapes."""
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
    sys.path.insert(0, path)
    try:
        return [importlib.import_module(name) for name in names]
    finally:
        sys.path.remove(path)


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


def build_moco(moco_class, numbers: dict, base_encoder=None):
    """The official MoCo-style module (MoCo's `MoCo`, JCL's `MoCoUnlimitedKeysDefault`) as both
    `main_moco.py`s build it, `--mlp` on, with our numbers; refused when the `--mlp` head (as wide
    as the feature) is not our config's hidden width."""
    n = numbers
    model = moco_class(
        encoder_factory(n, base_encoder),
        n["out_dim"],
        n["queue"],
        n["momentum_ema"],
        n["temperature"],
        True,
    )
    if model.encoder_q.fc[0].out_features != n["hidden"]:
        raise SystemExit(
            f"error: the official --mlp head is {model.encoder_q.fc[0].out_features} wide, "
            f"our config's {n['hidden']}: give the config a hidden width of the feature dim"
        )
    return model


def sgd(model, numbers: dict):
    """The official optimiser (MoCo main_moco.py:195-197, JCL main_moco.py:224-226)."""
    import torch

    n = numbers
    return torch.optim.SGD(
        model.parameters(), n["lr"], momentum=n["momentum"], weight_decay=n["weight_decay"]
    )


def run_epochs(main_moco, train_loader, model, criterion, optimizer, args, steps: int) -> None:
    """The official epoch loop (MoCo main_moco.py:260-266, JCL :289-306): per epoch
    `adjust_learning_rate`, then `train`; the last epoch cut at `steps` (no sampler, no checkpoint
    file)."""
    per_epoch = len(train_loader)
    for epoch in range(args.epochs):
        main_moco.adjust_learning_rate(optimizer, epoch, args)
        batches = min(per_epoch, steps - epoch * per_epoch)
        main_moco.train(Cut(train_loader, batches), model, criterion, optimizer, epoch, args)


def train_mocov2(path: str, numbers: dict, base_encoder=None):
    """MoCo v2 as `main_moco.py` trains it (`--mlp --aug-plus --cos`, our numbers): the official
    `moco.builder.MoCo`, `moco.loader.TwoCropsTransform`, `main_moco.train` and
    `main_moco.adjust_learning_rate` per epoch. Returns (the MoCo module, the loss curve, {})."""
    import torch

    builder, loader, main_moco = import_official(path, "moco.builder", "moco.loader", "main_moco")
    n = numbers
    transform = loader.TwoCropsTransform(ops_to_transforms(n["ops"], n["mean"], n["std"]))
    train_loader = seeded_loader(n, transform)
    with moco_shims(builder, main_moco):
        model = build_moco(builder.MoCo, n, base_encoder)
        criterion = LoggedLoss(torch.nn.CrossEntropyLoss().cuda())
        optimizer = sgd(model, n)
        epochs = math.ceil(n["steps"] / len(train_loader))
        args = argparse.Namespace(
            lr=n["lr"], cos=True, epochs=epochs, schedule=[], gpu=None, print_freq=10**9
        )
        run_epochs(main_moco, train_loader, model, criterion, optimizer, args, n["steps"])
    return model, criterion.curve, {}


def train_jcl(path: str, numbers: dict, base_encoder=None):
    """JCL as its `main_moco.py` trains it (`scripts/main_pretrain.sh`: `--mlp --aug-plus --cos
    --model_version MoCoUnlimitedKeysDefault --jcl 1`, `--k_crops` = M' + 1, `--jcl_lambda` λ; our
    numbers): the official `moco.MoCoUnlimitedKeysDefault`, `moco.loader.MultiCropsTransform`,
    `main_moco.train` (its λ ramp `jcl_lambda·(epoch + 1)/epochs` and `loss = ce + jcl_loss`) and
    `main_moco.adjust_learning_rate` per epoch. Returns (the module, the loss curve of
    ce + jcl_loss, {"lambda_per_epoch": the `ratio` each epoch's forwards got})."""
    import torch

    jcl, loader, main_moco = import_official(
        path, "moco.moco_unlimit_key_default", "moco.loader", "main_moco"
    )
    n = numbers
    k_crops = n["num_keys"] + 1
    transform = loader.MultiCropsTransform(
        ops_to_transforms(n["ops"], n["mean"], n["std"]), k_crops=k_crops
    )
    train_loader = seeded_loader(n, transform)
    seen = {"jcl_loss": 0.0, "ratios": []}

    def record(module, args, kwargs, output):  # measurement only: what `train` got back
        seen["jcl_loss"] = output[2].detach()
        if not seen["ratios"] or seen["ratios"][-1] != kwargs["ratio"]:
            seen["ratios"].append(kwargs["ratio"])

    with moco_shims(jcl, main_moco):
        model = build_moco(jcl.MoCoUnlimitedKeysDefault, n, base_encoder)
        hook = model.register_forward_hook(record, with_kwargs=True)
        criterion = LoggedLoss(torch.nn.CrossEntropyLoss().cuda(0), lambda: seen["jcl_loss"])
        optimizer = sgd(model, n)
        epochs = math.ceil(n["steps"] / len(train_loader))
        args = argparse.Namespace(
            lr=n["lr"],
            cos=True,
            epochs=epochs,
            schedule=[],
            gpu=0,
            print_freq=10**9,
            jcl=1,
            jcl_lambda=n["lam"],
            k_crops=k_crops,
        )
        main_moco.logger = main_moco.setup_logger(
            output=None, distributed_rank=0, color=False, name="moco"
        )
        run_epochs(main_moco, train_loader, model, criterion, optimizer, args, n["steps"])
        hook.remove()
    return model, criterion.curve, {"lambda_per_epoch": [round(r, 6) for r in seen["ratios"]]}


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


from experiments.official import ring  # noqa: E402  (ring.py reads the helpers above)

METHODS = {
    "mocov2": ("moco", train_mocov2),
    "jcl": ("jcl", train_jcl),
    "ir": ("ring", ring.train),
    "iring": ("ring", ring.train),
    "iring+official": ("ring", ring.train),  # the Ring code's m 0, k 4096, uniform bank init
    "mocoring": ("ring", ring.train),
    "mocoring+ourviews": ("ring", ring.train),  # the views made by our pipeline (StoredViews)
    "scce": ("sce", train_sce.train_scce),
    "ressl": ("ressl", train_ressl.train_ressl),
    "interclr": ("mmselfsup", train_interclr.train_interclr),  # online labels (the config's)
    "interclr+offline": ("mmselfsup", train_interclr.train_interclr),  # re-clustered offline
    "cmc": ("cmc", train_cmc.train_cmc),  # color_fashion_mnist: L and ab, NCE against two banks
    "infomin": ("pycontrast", train_infomin.train_infomin),  # aug D + jigsaw, RGBMoCo
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--method", choices=sorted(METHODS), required=True)
    parser.add_argument("--numbers", required=True, help="the recipe as JSON (runner.py)")
    parser.add_argument("--out", required=True, help="folder for features.npz and run.json")
    parser.add_argument("--official-root", default="", help="where the checkouts are")
    parser.add_argument(
        "--threads",
        type=int,
        default=int(os.environ.get("SSL_JAX_OFFICIAL_THREADS", 0)) or os.cpu_count(),
        help="torch's intra-op threads ($SSL_JAX_OFFICIAL_THREADS, else every core): 1 beside "
        "other busy processes, where 2 threads spin-wait (JCL: 4.5 against 0.14 s a step)",
    )
    args = parser.parse_args(argv)
    import torch

    import_torchvision()  # before the official modules import it
    torch.set_num_threads(args.threads)
    checkout, train = METHODS[args.method]
    path = checkouts.check(checkout, args.official_root)
    numbers = json.loads(args.numbers)
    os.makedirs(args.out, exist_ok=True)
    t0, cpu0 = time.time(), cpu_seconds()
    model, curve, extra = train(path, numbers)
    pretrain_s, pretrain_cpu_s = time.time() - t0, cpu_seconds() - cpu0
    encoder = extra.pop("encoder") if "encoder" in extra else model.encoder_q
    embed = extra.pop("embed", None)
    train_x, train_y = features(encoder, numbers, "train", embed=embed)
    test_x, test_y = features(encoder, numbers, "test", embed=embed)
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
        **extra,
    )
    with open(os.path.join(args.out, "run.json"), "w") as f:
        json.dump(run, f, indent=1)
    print(f"official {args.method}: {numbers['steps']} steps in {pretrain_s:.0f} s", flush=True)


if __name__ == "__main__":
    main()
