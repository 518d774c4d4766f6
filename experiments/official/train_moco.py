"""MoCo v2 (facebookresearch/moco) and JCL (caiqi/Joint-Contrastive-Learning) as their
`main_moco.py`s train them, on our data at our budget: the official builders, `train` and
`adjust_learning_rate` per epoch; the shims are `checkouts.SHIMS['moco']` / `['jcl']`. Imported by
`harness.py` (its `METHODS`)."""

from __future__ import annotations

import argparse
import contextlib
import math

from experiments.official import common


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


def build_moco(moco_class, numbers: dict, base_encoder=None):
    """The official MoCo-style module (MoCo's `MoCo`, JCL's `MoCoUnlimitedKeysDefault`) as both
    `main_moco.py`s build it, `--mlp` on, with our numbers; refused when the `--mlp` head (as wide
    as the feature) is not our config's hidden width."""
    n = numbers
    model = moco_class(
        common.encoder_factory(n, base_encoder),
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


def run_epochs(main_moco, train_loader, model, criterion, optimizer, args, steps: int) -> None:
    """The official epoch loop (MoCo main_moco.py:260-266, JCL :289-306): per epoch
    `adjust_learning_rate`, then `train`; the last epoch cut at `steps` (no sampler, no checkpoint
    file)."""
    per_epoch = len(train_loader)
    for epoch in range(args.epochs):
        main_moco.adjust_learning_rate(optimizer, epoch, args)
        batches = min(per_epoch, steps - epoch * per_epoch)
        main_moco.train(common.Cut(train_loader, batches), model, criterion, optimizer, epoch, args)


def train_mocov2(path: str, numbers: dict, base_encoder=None):
    """MoCo v2 as `main_moco.py` trains it (`--mlp --aug-plus --cos`, our numbers): the official
    `moco.builder.MoCo`, `moco.loader.TwoCropsTransform`, `main_moco.train` and
    `main_moco.adjust_learning_rate` per epoch. Returns (the MoCo module, the loss curve, {})."""
    import torch

    builder, loader, main_moco = common.import_official(
        path, "moco.builder", "moco.loader", "main_moco"
    )
    n = numbers
    transform = loader.TwoCropsTransform(common.ops_to_transforms(n["ops"], n["mean"], n["std"]))
    train_loader = common.seeded_loader(n, transform)
    with moco_shims(builder, main_moco):
        model = build_moco(builder.MoCo, n, base_encoder)
        criterion = common.LoggedLoss(torch.nn.CrossEntropyLoss().cuda())
        optimizer = common.sgd(model, n)
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

    jcl, loader, main_moco = common.import_official(
        path, "moco.moco_unlimit_key_default", "moco.loader", "main_moco"
    )
    n = numbers
    k_crops = n["num_keys"] + 1
    transform = loader.MultiCropsTransform(
        common.ops_to_transforms(n["ops"], n["mean"], n["std"]), k_crops=k_crops
    )
    train_loader = common.seeded_loader(n, transform)
    seen = {"jcl_loss": 0.0, "ratios": []}

    def record(module, args, kwargs, output):  # measurement only: what `train` got back
        seen["jcl_loss"] = output[2].detach()
        if not seen["ratios"] or seen["ratios"][-1] != kwargs["ratio"]:
            seen["ratios"].append(kwargs["ratio"])

    with moco_shims(jcl, main_moco):
        model = build_moco(jcl.MoCoUnlimitedKeysDefault, n, base_encoder)
        hook = model.register_forward_hook(record, with_kwargs=True)
        criterion = common.LoggedLoss(torch.nn.CrossEntropyLoss().cuda(0), lambda: seen["jcl_loss"])
        optimizer = common.sgd(model, n)
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
