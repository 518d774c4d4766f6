"""ReSSL as its authors' `ressl.py` trains it (`checkouts.CHECKOUTS['ressl']`), on our data at our
budget: the official `network.ressl.ReSSL` (the EMA before the keys, shuffle-BN, the queue),
`network.backbone.BackBone` and `network.head.ProjectionHead` (L2-normalised outputs) and
`ressl.train` per epoch (its per-iteration `adjust_learning_rate`, the loss of ressl.py:68 with
τ 0.1 and `--t` τ_m, the SGD step). Imported by `harness.py` (its `METHODS`); the shims are
`checkouts.SHIMS['ressl']`.
"""

from __future__ import annotations

import contextlib
import functools
import math
import sys
import types

from experiments.official import common, train_moco


@contextlib.contextmanager
def script_argv(argv: list[str]):
    """`sys.argv` as the official command line while `ressl.py` parses it at import (ressl.py:20)."""
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved


def param_groups(model, weight_decay: float) -> list[dict]:
    """The official optimiser's two groups (ressl.py:100-109, in `main` with DDP): parameters whose
    name holds 'bn' or 'bias' without weight decay, the rest with it."""
    named = dict(model.named_parameters())
    no_decay = [v for k, v in named.items() if "bn" in k or "bias" in k]
    rest = [v for k, v in named.items() if not ("bn" in k or "bias" in k)]
    return [
        {"params": no_decay, "weight_decay": 0},
        {"params": rest, "weight_decay": weight_decay},
    ]


class ViewPairs:
    """Items as `ImagenetContrastive` gives them (data/imagenet.py:85-92): the two views, no
    label (`train` unpacks `(img1, img2)`)."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i):
        return self.dataset[i][0]


def train_ressl(path: str, numbers: dict, base_encoder=None):
    """ReSSL as `script/train.sh` runs `ressl.py` (`--t` τ_m, `--lr`, `--epochs`), with our
    numbers: `ReSSL(backbone, dim=out_dim, K=queue, m)` whose `BackBone` is our torchvision
    ResNet (`base_encoder(num_classes)` when a test gives one) with the official head at our
    hidden width; `ressl.train` each epoch on our weak / strong views (`im_q` the strong, `im_k`
    the weak one, as `ImagenetContrastive(aug=[moco_aug, target_aug])` gives them). Returns (the
    ReSSL module, the loss curve, {"encoder": the query backbone})."""
    import torch

    n = numbers
    steps_per_epoch = n["train_subset"] // n["batch"]
    epochs = math.ceil(n["steps"] / steps_per_epoch)
    argv = ["ressl.py", f"--epochs={epochs}", f"--lr={n['lr']}", f"--t={n['temperature_m']}"]
    with script_argv(argv + ["--backbone=resnet18"]):
        ressl, network_ressl, backbone = common.import_official(
            path,
            "ressl",
            "network.ressl",
            "network.backbone",
            stubs={"mc": types.ModuleType("mc")},  # data/imagenet.py:5, the memcached client
        )
    ressl.warm_up = 0  # ressl.py:24 (5 epochs): our config has none (`runner.numbers` refuses one)
    weak, strong = (common.ops_to_transforms(ops, n["mean"], n["std"]) for ops in n["view_ops"])
    train_loader = common.seeded_loader(
        n, lambda image: (strong(image), weak(image)), wrap=ViewPairs
    )
    if len(train_loader) != steps_per_epoch:
        raise SystemExit(f"error: {len(train_loader)} batches an epoch, not {steps_per_epoch}")
    make = common.encoder_factory(n, base_encoder)

    def net():  # the backbone's trunk (network/backbone.py:23): ours, pooled features out
        module = make(1)
        module.fc = torch.nn.Identity()
        return module

    backbone.backbone_dict["resnet18"] = net
    backbone.dim_dict["resnet18"] = n["feature_dim"]
    # network/ressl.py:24-25 builds BackBone(backbone, dim) with the default hidden width 4096
    network_ressl.BackBone = functools.partial(backbone.BackBone, hidden_dim=n["hidden"])
    curve = []
    meter = recording_meter(ressl.AverageMeter, curve)
    ressl.AverageMeter = meter
    with train_moco.moco_shims(network_ressl):
        model = network_ressl.ReSSL(
            backbone="resnet18", dim=n["out_dim"], K=n["queue"], m=n["momentum_ema"]
        )
        optimizer = torch.optim.SGD(
            param_groups(model, n["weight_decay"]),
            lr=n["lr"],
            momentum=n["momentum"],
            weight_decay=n["weight_decay"],
        )
        criterion = torch.nn.CrossEntropyLoss()  # built and passed, unused (ressl.py:119)
        for epoch in range(epochs):  # ressl.py:138-140, without the sampler and checkpoint
            batches = min(steps_per_epoch, n["steps"] - epoch * steps_per_epoch)
            # the cut last epoch keeps its full length: `train` reads it for the lr schedule
            loader = common.Cut(train_loader, batches, length=steps_per_epoch)
            ressl.train(loader, model, None, 0, criterion, optimizer, n["lr"], epoch)
    return model, curve, {"encoder": model.encoder_q.net}


def recording_meter(average_meter, curve: list):
    """`util.meter.AverageMeter` that also keeps every `LOG_EVERY`-th value of the 'Loss' meter
    (`losses.update(loss.item(), ...)`, ressl.py:72) in `curve` (measurement only)."""
    step = {"n": 0}

    class RecordingMeter(average_meter):
        def update(self, val, n=1):
            super().update(val, n)
            if self.name == "Loss":
                step["n"] += 1
                if step["n"] % common.LOG_EVERY == 0:
                    curve.append([step["n"], round(float(val), 5)])

    return RecordingMeter
