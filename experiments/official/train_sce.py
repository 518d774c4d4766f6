"""SCE as CEA-LIST/SCE trains it (`checkouts.CHECKOUTS['sce']`), on our data at our budget: the
official `SCEModel` (its `training_step`: the asymmetric weak → target, strong → online path,
`compute_loss`, `update_queue`), `MLPHead`, `SplitBatchNorm2D`, `on_train_batch_end` (the EMA
after the optimiser step, the momentum schedule), `optimizer_factory` and `scheduler_factory`,
called in the order of Lightning's automatic optimisation. Imported by `harness.py` (its
`METHODS`); the shims are `checkouts.SHIMS['sce']`.

Why this code base and not juliendenize/eztorch (its archived successor): both need Lightning and
hydra, but eztorch's package `__init__` imports every part of it (video data sets, SoccerNet,
timm, pytorchvideo, torchaug, torchvision 0.15), which cannot be installed beside torch 2.13;
CEA-LIST/SCE's model, optimiser and scheduler modules import with one module replaced
(`sce/utils/strategies.py`, which names Lightning 1.6 strategy classes that Lightning 2 dropped).
"""

from __future__ import annotations

import importlib.util
import math
import os
import types

from experiments.official import common


def trunk(width: float, stem: str, channels: int):
    """The trunk `hydra.utils.instantiate` builds for the online and the momentum network (in
    place of `sce.models.trunks.create_resnet(num_classes=0, small_input=...)`): our torchvision
    ResNet-18, its `fc` the identity as `create_resnet` leaves it for `num_classes=0`."""
    import torch

    model = common.torchvision_resnet(width, stem, channels, num_classes=1)
    model.fc = torch.nn.Identity()
    return model


def strategies_stub() -> types.ModuleType:
    """`sce.utils.strategies` for one CPU process: its module body imports Lightning 1.6's
    strategy classes (DDP2Strategy, HorovodStrategy, ...), gone in Lightning 2; the one function
    the model calls (`get_num_devices_in_trainer`, from `on_train_start`) answers 1, as the
    official one does for `SingleDeviceStrategy`."""
    stub = types.ModuleType("sce.utils.strategies")

    def unavailable(*args, **kwargs):
        raise NotImplementedError("sce.utils.strategies is replaced for one CPU process")

    stub.get_num_devices_in_trainer = lambda trainer: 1
    stub.get_global_batch_size_in_trainer = unavailable
    stub.get_local_batch_size_in_trainer = unavailable
    stub.get_trainer_strategy = unavailable
    return stub


def load_file(path: str, relative: str, name: str) -> types.ModuleType:
    """One official file as a module of its own, without its package's `__init__` (SCE's
    `sce/transforms/__init__.py` imports a module its commit does not have)."""
    spec = importlib.util.spec_from_file_location(name, os.path.join(path, relative))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lightning_steps(model, loader, optimizer, scheduler, steps: int, curve: list) -> None:
    """What `Trainer.fit` runs for each batch of the official run (Lightning's automatic
    optimisation, one device): `training_step`, zero_grad, backward, `optimizer.step`, then the
    model's `on_train_batch_end` (the EMA of trunk and projector, the next momentum) and the
    step-interval scheduler; epochs until `steps` batches. The loss is kept every `LOG_EVERY`
    steps (measurement only)."""
    model.train()
    step = 0
    while step < steps:
        for batch_idx, batch in enumerate(loader):
            if step == steps:
                break
            outputs = model.training_step(batch, batch_idx)
            optimizer.zero_grad()
            outputs["loss"].backward()
            optimizer.step()
            model.on_train_batch_end(outputs, batch, batch_idx)
            scheduler["scheduler"].step()
            step += 1
            if step % common.LOG_EVERY == 0:
                value = round(float(outputs["loss"].detach()), 5)
                curve.append([step, value])
                print(f"step {step} | loss {value:.4f}", flush=True)


def train_scce(path: str, numbers: dict):
    """SCE as the CIFAR-10 config runs it (`run/pretrain/sce/resnet18/resnet18_cifar10.yaml`:
    `sym: False`, shuffle-BN simulated by `SplitBatchNorm2D` on the momentum trunk, SGD, the
    linear-warm-up cosine scheduler stepped per iteration, constant momentum), with our numbers
    and our trunk (`trunk`, by name, as the config's `_target_`). Returns (the SCE module, the loss curve, {"encoder": its trunk})."""

    n = numbers
    siamese, base, dict_dataset = common.import_official(
        path,
        "sce.models.siamese.sce",
        "sce.models.siamese.base",
        "sce.datasets.dict_dataset",
        "sce.models.heads",
        "sce.optimizers",
        "sce.schedulers",
        stubs={"sce.utils.strategies": strategies_stub()},
    )[:3]
    # the config objects and the instantiation as the official modules import them (omegaconf's
    # DictConfig in sce.py:10, hydra in base.py:5)
    config, instantiate = siamese.DictConfig, base.hydra.utils.instantiate
    multi_crop = load_file(path, "sce/transforms/multi_crop_transform.py", "sce_multi_crop")
    transform = multi_crop.MultiCropTransform(
        [
            {"transform": common.ops_to_transforms(ops, n["mean"], n["std"]), "num_views": 1}
            for ops in n["view_ops"]
        ]
    )
    train_loader = common.seeded_loader(n, transform, wrap=dict_dataset.DictDataset)
    per_epoch = len(train_loader)
    trunk_cfg = {
        "_target_": f"{__name__}.trunk",
        "width": n["width"],
        "stem": n["stem"],
        "channels": n["channels"],
    }
    projector_cfg = {  # configs/model/head/mlp/projector_resnet18_mlp2_bn1.yaml, our widths
        "_target_": "sce.models.heads.MLPHead",
        "activation_inplace": True,
        "activation_layer": "relu",
        "affine": True,
        "bias": False,
        "dropout": 0.0,
        "dropout_inplace": True,
        "hidden_dims": [n["hidden"]],
        "input_dim": n["feature_dim"],
        "norm_layer": "bn_1D",
        "num_layers": 2,
        "last_bias": True,
        "last_norm": False,
        "last_affine": False,
        "output_dim": n["out_dim"],
    }
    epochs = math.ceil(n["steps"] / per_epoch)
    optimizer_cfg = {  # configs/optimizer/factory/sgd + the CIFAR-10 run's overrides, our numbers
        "_target_": "sce.optimizers.optimizer_factory",
        "_recursive_": False,
        "name": "sgd",
        "initial_lr": n["lr"],
        "batch_size": n["batch"],
        "scaler": None,  # our base_lr is the lr (no scaling)
        "exclude_wd_norm": False,
        "exclude_wd_bias": False,
        "params": {
            "momentum": n["momentum"],
            "dampening": 0,
            "nesterov": False,
            "weight_decay": n["weight_decay"],
        },
        "scheduler": {
            "_target_": "sce.schedulers.scheduler_factory",
            "_recursive_": False,
            "name": "linear_warmup_cosine_annealing_lr",
            "params": {"max_epochs": epochs, "warmup_epochs": 0},
            "interval": "step",
        },
    }
    model = siamese.SCEModel(
        trunk=config(trunk_cfg),
        optimizer=config(optimizer_cfg),
        projector=config(projector_cfg),
        predictor=None,
        normalize_outputs=True,
        num_global_crops=2,
        num_local_crops=0,
        initial_momentum=n["momentum_ema"],
        scheduler_momentum="constant",
        shuffle_bn=True,
        num_devices=1,
        simulate_n_devices=n["key_bn_splits"],
        queue=config({"size": n["queue"], "feature_dim": n["out_dim"]}),
        sym=False,
        temp=n["temperature"],
        temp_m=n["temperature_m"],
        coeff=n["coeff"],
    )
    # base.py:91-93 (`configure_optimizers`), with the steps an epoch the trainer's datamodule
    # would give (train images // global batch)
    optimizer, scheduler = instantiate(
        model.optimizer_cfg, num_steps_per_epoch=per_epoch, model=model
    )
    curve = []
    lightning_steps(model, train_loader, optimizer, scheduler, n["steps"], curve)
    return model, curve, {"encoder": model.trunk}
