"""IR, IRing and MoCoRing as the Ring code (mhw32/contrastive-ring-public) trains them: its
`PretrainNCESystem` (`NCE` / `NCERing` on its `MemoryBank`) and `PretrainMoCoSystem`
(`MoCoRing` on its queue), their threshold policies and `MoCoLRScheduler`, stepped in the order
Lightning 1.1.8's `fit` calls them in one process (per epoch the lr callback, then per batch
`training_step`, `backward`, `optimizer.step`, `zero_grad`, `global_step += 1`). What cannot run
here is replaced (`checkouts.SHIMS['ring']`): Lightning and `cv2` by stand-ins, the data set by our
Fashion-MNIST subset through the official dataset classes, the network by our torchvision ResNet.

The numbers (`config_numbers`, from our config): `k` is the code's partition size, k − 1 random
or ring draws plus the positive, so our `num_negatives` draws are k = num_negatives + 1; the
bank's `m` is our `bank_momentum`, MoCoRing's `m` our EMA; `bank_init='normal'` (ours) replaces
`MemoryBank._create`'s uniform rows by normalize(randn), 'uniform' keeps the code's.

Imported by `harness.py` for its `METHODS`; the shared helpers are `common.py`'s.
"""

from __future__ import annotations

import contextlib
import math
import sys
import types

import numpy as np

from experiments.official import common

RING_METHODS = ("ir", "iring", "iring+official", "mocoring", "mocoring+ourviews")


def config_numbers(config, method: str) -> dict:
    """The Ring numbers of one of our configs (`runner.numbers` adds them to the shared ones): its
    method's `Hparams`, defaults included."""
    from ssl_jax.methods import METHODS, common

    mc = common.method_hparams(METHODS[config.method], config)
    if method.startswith("mocoring"):
        out = dict(system="PretrainMoCoSystem", loss="MoCoRing", k=int(mc.queue_size))
        out["m"] = float(config.ema.base)
    else:
        loss = "NCE" if method == "ir" else "NCERing"
        out = dict(system="PretrainNCESystem", loss=loss, k=int(mc.num_negatives) + 1)
        out.update(m=float(mc.bank_momentum), bank_init=mc.bank_init)
    if method != "ir":
        if mc.anneal not in ("constant", "linear"):
            raise SystemExit(
                f"error: the Ring code's runs here anneal 'constant' or 'linear', not {mc.anneal!r}"
            )
        if (mc.anneal_init, mc.anneal_final) != (1.0, 0.1):
            raise SystemExit(
                "error: the Ring code anneals the outer fraction from 1.0 to 0.1 (systems.py:108-114)"
            )
        out.update(
            thres_outer=float(mc.ring_outer),
            thres_inner=float(mc.ring_inner),
            linear_anneal=mc.anneal == "linear",
            max_anneal_epoch=float(mc.max_anneal_epochs),
        )
    return out


def official_config(numbers: dict, epochs: int) -> dict:
    """The Ring code's JSON config (`config/pretrain/*/*.json`) with our numbers, one process."""
    n = numbers
    loss_params = dict(loss=n["loss"], k=n["k"], t=n["temperature"], m=n["m"])
    for key in ("thres_outer", "thres_inner", "linear_anneal", "max_anneal_epoch"):
        if key in n:
            loss_params[key] = n[key]
    loss_params.update(dynamic_inner=True, neighbor_views=False, logsumexp_inner=True)
    return dict(
        system=n["system"],
        cuda=False,
        seed=n["seed"],
        shuffle_bn=True,
        data_loader_workers=0,
        data_params=dict(
            root=None, dataset="cifar10_2views" if n["loss"] == "MoCoRing" else "cifar10"
        ),
        model_params=dict(out_dim=n["out_dim"], resnet_version="resnet18"),
        loss_params=loss_params,
        optim_params=dict(
            batch_size=n["batch"],
            learning_rate=n["lr"],
            momentum=n["momentum"],
            weight_decay=n["weight_decay"],
            scheduler="MoCoLRScheduler",
        ),
        num_epochs=epochs,
        validate=False,
    )


@contextlib.contextmanager
def stand_ins(curve: list, log_every: int):
    """`checkouts.SHIMS['ring']`'s import rows: `pytorch_lightning` (its `LightningModule` an
    `nn.Module` with Lightning's one-process attributes and a `log_dict` that keeps the loss every
    `log_every` steps in `curve`, its `Callback` a plain base) and `cv2` (imported, unused, by
    `src/datasets/datasets.py`), removed again after."""
    import torch

    class LightningModule(torch.nn.Module):
        global_step = 0
        use_ddp = use_ddp2 = False  # set by Lightning's trainer; one process

        def log_dict(self, metrics):
            step = self.global_step + 1
            if step % log_every == 0:
                curve.append([step, round(float(metrics["loss"].detach()), 5)])
                print(f"step {step} | loss {curve[-1][1]:.4f}", flush=True)

    lightning = types.ModuleType("pytorch_lightning")
    lightning.LightningModule, lightning.Callback = LightningModule, object
    saved = {name: sys.modules.get(name) for name in ("pytorch_lightning", "cv2")}
    sys.modules["pytorch_lightning"] = lightning
    sys.modules["cv2"] = types.ModuleType("cv2")
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def official_datasets(datasets, numbers: dict):
    """`datasets.get_datasets` (src/datasets/datasets.py:20-55) for our subset: the official
    `DATASET[name]` class (`CIFAR10`: (index, view, label); `CIFAR10TwoViews`: (index, view,
    view, label)) around our PIL images through the recipe's transforms, no validation set."""
    import torch

    n = numbers
    images, labels = common.read_subset(n)
    if n.get("views_file"):  # a `+ourviews` cell: our pipeline's views, then ToTensor, Normalize
        views = np.load(n["views_file"], mmap_mode="r")
        pil = common.StoredViews(views, labels, common.ops_to_transforms([], n["mean"], n["std"]))
    else:
        pil = common.PILDataset(
            images, labels, common.ops_to_transforms(n["ops"], n["mean"], n["std"])
        )
    pil.targets = list(labels)  # what systems.py:68 reads of torchvision's CIFAR10

    def get_datasets(root, dataset_name, **transform_flags):
        cls = datasets.DATASET[dataset_name]
        train = cls.__new__(cls)
        torch.utils.data.Dataset.__init__(train)
        train.dataset = pil
        return train, None

    return get_datasets


def normal_rows(utils):
    """Our bank init (`bank_init='normal'`) in the place of `MemoryBank._create`
    (src/objectives/memory.py:17-24, uniform rows): normalize(randn)."""
    import torch

    def create(self):
        return utils.l2_normalize(torch.randn(self.size, self.dim, requires_grad=False), dim=1)

    return create


def pooled(model):
    """The query encoder's pooled backbone as `common.features` reads an encoder (an `fc` it sets
    aside while it runs): `CustomResNet.features` (src/models/resnet2.py:21), flattened."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net, self.fc = model, torch.nn.Identity()

        def forward(self, x):
            return self.fc(self.net.features(x).flatten(1))

    return Pooled()


def train(path: str, numbers: dict, base_encoder=None):
    """One Ring-code run (`numbers` from `config_numbers` and `runner.numbers`). Returns (the
    query encoder's pooled backbone as `encoder_q` beside the trained `system`, the loss curve,
    {"thres_outer_per_epoch": the outer fraction at each epoch's first step}, none for IR)."""
    n, curve = numbers, []
    make_encoder = common.encoder_factory(n, base_encoder)
    with stand_ins(curve, common.LOG_EVERY):
        systems, callbacks, datasets, resnet2, memory, utils, run = common.import_official(
            path,
            "src.systems.systems",
            "src.utils.callbacks",
            "src.datasets.datasets",
            "src.models.resnet2",
            "src.objectives.memory",
            "src.utils.utils",
            "scripts.run",
        )
        datasets.get_datasets = official_datasets(datasets, n)
        resnet2.models = types.SimpleNamespace(
            resnet18=lambda pretrained=False: make_encoder(1000),
            resnet50=lambda pretrained=False: None,
        )
        if n.get("bank_init") == "normal":
            memory.MemoryBank._create = normal_rows(utils)
        per_epoch = (n["train_subset"] or 60_000) // n["batch"]  # drop_last: systems.py:38
        epochs = math.ceil(n["steps"] / per_epoch)
        config = systems.DotMap(official_config(n, epochs))
        run.seed_everything(config.seed, use_cuda=config.cuda)  # scripts/run.py:29
        system = systems.__dict__[config.system](config)
        if system.model.l1.out_features != n["hidden"]:
            raise SystemExit(
                f"error: the Ring code's head is {system.model.l1.out_features} wide, our "
                f"config's {n['hidden']}: give the config a hidden width of the feature dim"
            )
        optimizer = system.configure_optimizers()[0][0]
        loader = system.train_dataloader()
        lr_callback = callbacks.MoCoLRScheduler(
            initial_lr=config.optim_params.learning_rate,
            use_cosine_scheduler=True,
            max_epochs=epochs,
        )
        trainer = types.SimpleNamespace(current_epoch=0, optimizers=[optimizer])
        outer = []
        system.train()
        for epoch in range(epochs):
            trainer.current_epoch = epoch
            lr_callback.on_epoch_start(trainer, system)
            if "thres_outer" in n:  # NCE (IR) has no ring
                outer.append(float(system.thres_outer_policy.get_threshold(system.global_step)))
            for batch_idx, batch in enumerate(loader):
                if system.global_step == n["steps"]:
                    break
                loss = system.training_step(batch, batch_idx)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                system.global_step += 1
    model = types.SimpleNamespace(encoder_q=pooled(system.model), system=system)
    return model, curve, ({"thres_outer_per_epoch": outer} if outer else {})
