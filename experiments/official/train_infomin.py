"""InfoMin as PyContrast's `main_contrast.py --method InfoMin` trains it
(`checkouts.CHECKOUTS['pycontrast']`), on our colour images at our budget. The official `main()`
runs as it is: `TrainOptions().parse()` of a command line of our numbers, then `main_worker` on
this process as the one GPU of one node (`ContrastTrainer.init_ddp_environment` in a gloo group of
one process, `build_model` → `RGBMultiHeads` and its EMA twin, `build_mem` → `RGBMoCo`,
CrossEntropy, SGD, `wrap_up`, then per epoch `adjust_learning_rate` and `train` → `_train_moco`:
shuffle-BN keys, the query and jigsaw forwards, (1 − β)·CE + β·CE_jig, the SGD step, then the
EMA). Aug "D" and the jigsaw transform are the official classes (`datasets/util.py`,
`datasets/RandAugment.py`) in `build_transforms`' order (util.py:279-300, :325-334) with our
recipe's numbers (32 px views; a 36-px RRC cut into 3 × 3 cells of 12 px, a 9-px patch each).

The lr is the official `BaseTrainer.adjust_learning_rate` with `--cosine` (base_trainer.py:66-79):
once per epoch e = 1..E, `η_min + (lr − η_min)(1 + cos(π e / E)) / 2`, η_min = lr·0.1³
(`--lr_decay_rate` 0.1, the default); no warm-up (`--warm` is off up to batch 256,
train_options.py:43). Imported by `harness.py` (its `METHODS`); every replacement of official code
is a row of `checkouts.SHIMS['pycontrast']`.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import sys
import tempfile
import types

import numpy as np

from experiments.official import common

# The checkout's code folder (the repository root holds docs and `pycontrast/`).
CODE = "pycontrast"
# `--method InfoMin` (options/base_options.py:19): modal, jigsaw, mem, aug, head, nce_t.
PRESET = dict(modal="RGB", jigsaw=True, mem="moco", aug="D", head="mlp", nce_t=0.15)
# Aug "D"'s transforms in `build_transforms`' order (datasets/util.py:286-297).
AUG_D = (
    "random_resized_crop",
    "horizontal_flip",
    "color_jitter",
    "gaussian_blur",
    "rand_augment",
    "grayscale",
)


def _refuse(message: str):
    raise SystemExit(f"error: official infomin: {message}")


def check_aug_d(ops) -> None:
    """Our view recipe against what the official aug-"D" classes can take (util.py:279-300): its
    six transforms in its order; the blur's σ ~ U(0.1, 2) and odd taps (`GaussianBlur`,
    util.py:124-163); RandAugment over its 15 ops, each applied with p 0.5, an integer magnitude
    (`rand_augment_transform`'s config string); RRC's default aspect ratios."""
    kinds = [op["op"] for op in ops]
    if tuple(kinds) != AUG_D:
        _refuse(f"aug D is {list(AUG_D)} (datasets/util.py:286-297), not {kinds}")
    for op in ops:
        kind = op["op"]
        if kind == "random_resized_crop" and tuple(op.get("ratio", (3 / 4, 4 / 3))) != (
            3 / 4,
            4 / 3,
        ):
            _refuse("RandomResizedCrop takes its default aspect ratios (util.py:287)")
        if kind == "gaussian_blur":
            taps = op.get("kernel_size", 0)
            if tuple(op["sigma"]) != (0.1, 2.0) or taps < 1 or taps % 2 == 0:
                _refuse("GaussianBlur draws σ from U(0.1, 2) with odd taps (util.py:127, :148)")
        if kind == "rand_augment":
            magnitude = op.get("magnitude", 10.0)
            if "ops" in op or op.get("increasing", False):
                _refuse("RandAugment draws from its 15 RGB ops (RandAugment.py:312-328)")
            if op.get("p", 0.5) != 0.5 or magnitude != int(magnitude):
                _refuse("RandAugment applies each op with p 0.5 at an integer magnitude (:379)")


def check_jigsaw(ops) -> dict:
    """Our jigsaw recipe against the official jigsaw transform (util.py:325-334: RRC, flip,
    `JigsawCrop`, each patch normalised): its RRC size and scale, the grid and the patch."""
    kinds = [op["op"] for op in ops]
    if kinds != ["random_resized_crop", "horizontal_flip", "jigsaw"] or ops[1]["p"] != 0.5:
        _refuse(f"the jigsaw transform is RRC, flip, JigsawCrop (util.py:325-334), not {kinds}")
    rrc, jig = ops[0], ops[2]
    if tuple(rrc.get("ratio", (3 / 4, 4 / 3))) != (3 / 4, 4 / 3):
        _refuse("the jigsaw RandomResizedCrop takes its default aspect ratios (util.py:326)")
    if jig["patch"] > rrc["size"] // jig["grid"]:
        _refuse(f"a {jig['patch']}-px patch does not fit a cell of {rrc['size'] // jig['grid']} px")
    return dict(
        jigsaw_size=int(rrc["size"]),
        jigsaw_scale=[float(s) for s in rrc.get("scale", (0.08, 1.0))],
        jigsaw_grid=int(jig["grid"]),
        jigsaw_patch=int(jig["patch"]),
    )


def infomin_numbers(config, method: str) -> dict:
    """InfoMin's own numbers from our config: the jigsaw branch on or off, β, the jigsaw
    transform's sizes; refused (one error line) where the official code has no such setting."""
    from ssl_jax.config_checks import hparams_from_config
    from ssl_jax.methods import infomin
    from ssl_jax.models import feature_dim

    hp = hparams_from_config(infomin.Hparams, config)
    data, model, optim, ema = config.data, config.model, config.optim, config.ema
    views = tuple(data.views)
    if int(data.channels) != 3:
        _refuse(f"modal RGB reads 3-channel images, not {data.channels}")
    if len(views) != (3 if hp.jigsaw else 2) or views[0] != views[1]:
        _refuse(f"two crops of one transform{' and the jigsaw view' if hp.jigsaw else ''}: {views}")
    check_aug_d([dict(op) for op in data.recipes[views[0]]])
    if hp.key_bn_group_size not in (0, config.global_batch_size):
        _refuse(
            "one process computes the keys' BN over the whole batch (contrast_trainer.py:157-200: "
            "the shuffle permutes one group): method_config.key_bn_group_size=0"
        )
    if model.backbone != "resnet18":
        _refuse(f"the harness builds torchvision's resnet18, not {model.backbone}")
    head, width = model.projector, feature_dim(18, model.width)
    if (
        tuple(head.hidden_dims) != (width,)
        or head.use_bn
        or head.last_bn
        or not (head.hidden_bias and head.last_bias)
    ):
        _refuse(
            f"the 'mlp' head is Linear({width}, {width}), ReLU, Linear (build_backbone.py:23-29), "
            f"not hidden {tuple(head.hidden_dims)} with BN {head.use_bn}"
        )
    if ema.schedule != "constant" or ema.target_init != "copy":
        _refuse("the EMA's α is constant, the EMA a copy at the start (contrast_trainer.py:67)")
    if optim.schedule != "cosine" or optim.nesterov or optim.get("exclude_1d", False):
        _refuse("SGD (no Nesterov) on every parameter with --cosine (main_contrast.py:50-53)")
    if (optim.schedule_unit, optim.epoch_offset, optim.warmup_epochs) != ("epoch", 1.0, 0) or (
        not math.isclose(optim.final_lr, optim.base_lr * 0.1**3)
    ):
        _refuse(
            "--cosine sets the lr once per epoch, epochs from 1, to lr·0.1³ (base_trainer.py:66-79): "
            "optim.schedule_unit=epoch optim.epoch_offset=1.0 optim.final_lr=base_lr/1000"
        )
    if config.global_batch_size > 256:
        _refuse("above batch 256 the code turns on a 5-epoch warm-up (train_options.py:43)")
    extra = dict(jigsaw=bool(hp.jigsaw), beta=float(hp.jigsaw_weight))
    if hp.jigsaw:
        extra.update(check_jigsaw([dict(op) for op in data.recipes[views[2]]]))
    return extra


def command_line(n: dict, epochs: int, folder: str) -> list[str]:
    """`main_contrast.py`'s arguments for our numbers: the `InfoMin` preset (or `Customize` with
    its values where our τ or jigsaw differ), DDP of one process on one GPU over gloo, files in
    `folder`."""
    preset = n["jigsaw"] and n["temperature"] == PRESET["nce_t"]
    method = ["--method", "InfoMin"]
    if not preset:
        method = ["--method", "Customize", "--modal", "RGB", "--mem", "moco", "--aug", "D"]
        method += ["--head", "mlp", "--nce_t", str(n["temperature"])]
        method += ["--jigsaw"] if n["jigsaw"] else []
    return [
        "main_contrast.py",
        *method,
        *("--data_folder", folder, "--model_path", folder, "--tb_path", folder),
        *("--print_freq", str(common.LOG_EVERY), "--batch_size", str(n["batch"]), "-j", "0"),
        *("--epochs", str(epochs), "--learning_rate", str(n["lr"]), "--cosine"),
        *("--weight_decay", str(n["weight_decay"]), "--momentum", str(n["momentum"])),
        *("--arch", "ours", "--feat_dim", str(n["out_dim"]), "--nce_k", str(n["queue"])),
        *("--alpha", str(n["momentum_ema"]), "--beta", str(n.get("beta", 0.5))),
        *("--world-size", "1", "--rank", "0", "--dist-backend", "gloo"),
        *("--dist-url", f"file://{os.path.join(folder, 'store')}", "--multiprocessing-distributed"),
        *("--seed", str(n["seed"])),
    ]


def view_transform(util, rand_augment, n: dict):
    """Aug "D" of the official classes (util.py:286-300: torchvision's as the file imports them,
    its `GaussianBlur`, `rand_augment_transform`, `RGB2RGB`) with our recipe's numbers, our mean
    and std. `GaussianBlur(k − 1)` is k taps (util.py:127-128: `GaussianBlur(22)`, 23 taps)."""
    t = util.transforms
    out = []
    for op in n["ops"]:
        kind = op["op"]
        if kind == "random_resized_crop":
            out.append(t.RandomResizedCrop(op["size"], scale=tuple(op.get("scale", (0.08, 1.0)))))
        elif kind == "horizontal_flip":
            out.append(t.RandomHorizontalFlip(p=op["p"]))
        elif kind == "color_jitter":
            keys = ("brightness", "contrast", "saturation", "hue")
            jitter = t.ColorJitter(*(op.get(k, 0) for k in keys))
            out.append(t.RandomApply([jitter], p=op["p"]))
        elif kind == "gaussian_blur":
            out.append(t.RandomApply([util.GaussianBlur(op["kernel_size"] - 1)], p=op["p"]))
        elif kind == "rand_augment":
            params = dict(  # util.py:282-285 at our size
                translate_const=int(n["size"] * 0.45),
                img_mean=tuple(op.get("fill", (124, 116, 104))),
            )
            spec = f"rand-n{op.get('num_ops', 2)}-m{int(op.get('magnitude', 10))}"
            spec += f"-mstd{op.get('magnitude_std', 0.5)}"
            out.append(rand_augment.rand_augment_transform(spec, params, use_cmc=False))
        elif kind == "grayscale":
            out.append(t.RandomGrayscale(p=op["p"]))
        else:
            _refuse(f"aug D has no {kind!r}")
    out += [util.RGB2RGB(), t.ToTensor(), t.Normalize(mean=list(n["mean"]), std=list(n["std"]))]
    return t.Compose(out)


def jigsaw_transform(util, n: dict):
    """The official jigsaw transform (util.py:325-334) at our sizes, our mean and std."""
    t = util.transforms
    patch = t.Compose([util.RGB2RGB(), t.ToTensor(), t.Normalize(mean=n["mean"], std=n["std"])])
    return t.Compose(
        [
            t.RandomResizedCrop(n["jigsaw_size"], scale=tuple(n["jigsaw_scale"])),
            t.RandomHorizontalFlip(),
            util.JigsawCrop(
                n_grid=n["jigsaw_grid"], img_size=n["jigsaw_size"], crop_size=n["jigsaw_patch"]
            ),
            util.StackTransform(patch),
        ]
    )


def instance_dataset(dataset_module, images: list, labels, transform, jigsaw):
    """The official `ImageFolderInstance(two_crop=True, jigsaw_transform=...)` (util.py:354-358)
    over our images: its folder scan gives (index, label) pairs and its loader the index's RGB PIL
    image; `__init__` and `__getitem__` (the two crops, then the jigsaw) are the official ones."""
    classes = sorted({int(y) for y in labels})

    class OurImages(dataset_module.ImageFolderInstance):
        def find_classes(self, directory):
            return [str(c) for c in classes], {str(c): c for c in classes}

        @staticmethod
        def make_dataset(directory, class_to_idx, **kwargs):
            return [(i, int(y)) for i, y in enumerate(labels)]

    dataset = OurImages("", transform=transform, two_crop=True, jigsaw_transform=jigsaw)
    dataset.loader = images.__getitem__
    return dataset


class EpochCut:
    """The loader `main_worker` iterates each epoch and its sampler (main_contrast.py:67-72):
    `set_epoch(e)` (e from 1) cuts epoch e at the step budget's remaining batches (`common.Cut`);
    its length is the full epoch's."""

    def __init__(self, loader, steps: int):
        self.loader, self.steps, self.n = loader, steps, len(loader)

    def set_epoch(self, epoch: int) -> None:
        self.n = min(len(self.loader), self.steps - (epoch - 1) * len(self.loader))

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self):
        return iter(common.Cut(self.loader, self.n))


class OneGpuTorch:
    """`torch` as main_contrast.py and base_trainer.py see it: this process the one GPU of its
    node (`cuda.device_count()` 1, `cuda.set_device` and `cuda.empty_cache` no-ops); the rest is
    torch's own."""

    def __init__(self, torch):
        self._torch = torch
        self.cuda = types.SimpleNamespace(
            device_count=lambda: 1, set_device=lambda device: None, empty_cache=lambda: None
        )

    def __getattr__(self, name):
        return getattr(self._torch, name)


def tensorboard_stub(logged: dict) -> types.ModuleType:
    """`tensorboard_logger` (base_trainer.py:9): a `Logger` that keeps each epoch's values
    (`ContrastTrainer.logging`, contrast_trainer.py:24-38) in `logged`, no files."""

    class Logger:
        def __init__(self, logdir=None, flush_secs=2):
            pass

        def log_value(self, name, value, step):
            logged.setdefault(name, []).append(round(float(value), 6))

    module = types.ModuleType("tensorboard_logger")
    module.Logger = Logger
    return module


@contextlib.contextmanager
def pycontrast_shims(modules: dict, numbers: dict, build_loader, make_encoder, curve: list):
    """`checkouts.SHIMS['pycontrast']`'s rows on the imported modules: one GPU of one node,
    `mp.spawn` the worker in this process, torch's DDP in its CPU form, our encoder and widths,
    our data, `.cuda()` the identity; the loss kept every `LOG_EVERY` steps (measurement only).
    Undone on exit: `.cuda`, cuDNN's flag, `$PYTHONWARNINGS`, the process group."""
    import torch
    import torch.distributed as dist

    from experiments.official import train_interclr

    main, trainer = modules["main_contrast"], modules["learning.contrast_trainer"]
    backbone = modules["networks.build_backbone"]
    main.torch = modules["learning.base_trainer"].torch = OneGpuTorch(torch)
    main.mp = types.SimpleNamespace(spawn=lambda fn, nprocs, args: fn(0, *args))
    trainer.DDP = lambda module, device_ids=None: torch.nn.parallel.DistributedDataParallel(module)
    main.build_contrast_loader = build_loader
    backbone.model_dict = {"ours": lambda width: make_encoder()}
    # `_parse_width` gives `dim_in = int(2048 · width)` (build_backbone.py:12-13, :59): our features
    backbone.RGBSingleHead._parse_width = staticmethod(
        lambda name: (name, numbers["feature_dim"] / 2048)
    )
    official = trainer.ContrastTrainer._compute_loss_accuracy
    beta, step = numbers.get("beta", 0.5), [0]

    def logged(logits, target, criterion):  # contrast_trainer.py:284-288: the loss stepped on
        losses, accuracies = official(logits, target, criterion)
        step[0] += 1
        if step[0] % common.LOG_EVERY == 0:
            value = float(losses[0].detach())
            if len(losses) == 2:
                value = (1 - beta) * value + beta * float(losses[1].detach())
            curve.append([step[0], round(value, 5)])
            print(f"step {step[0]} | loss {value:.4f}", flush=True)
        return losses, accuracies

    trainer.ContrastTrainer._compute_loss_accuracy = staticmethod(logged)
    saved = torch.backends.cudnn.benchmark, os.environ.get("PYTHONWARNINGS")
    try:
        with train_interclr.cuda_identity():
            yield
    finally:
        torch.backends.cudnn.benchmark = saved[0]
        if saved[1] is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:
            os.environ["PYTHONWARNINGS"] = saved[1]
        if dist.is_initialized():
            dist.destroy_process_group()


MODULES = (
    "main_contrast",
    "learning.contrast_trainer",
    "learning.base_trainer",
    "networks.build_backbone",
    "datasets.util",
    "datasets.dataset",
    "datasets.RandAugment",
)


def train_infomin(path: str, numbers: dict, base_encoder=None):
    """InfoMin as `main_contrast.py --method InfoMin --cosine` trains it with our numbers (see the
    module's docstring): `main()` → `main_worker(0, 1, args)` for E = ⌈steps / steps an epoch⌉
    epochs, the last cut at the step count. Returns (the online `RGBMultiHeads`, the loss curve of
    (1 − β)·CE + β·CE_jig, {"encoder": its backbone, "lr_per_epoch": the lr each epoch ran})."""
    import torch

    from experiments.official import train_ressl

    n = numbers
    if n["hidden"] != n["feature_dim"]:
        _refuse(
            f"the 'mlp' head's hidden width is the feature dim {n['feature_dim']}, not {n['hidden']}"
        )
    random.seed(n["seed"])
    np.random.seed(n["seed"])  # noqa: NPY002 (JigsawCrop, GaussianBlur, RandAugment draw from it)
    torch.manual_seed(n["seed"])
    total = n["train_subset"] or len(common.read_subset(n)[1])
    per_epoch = total // n["batch"]
    epochs = math.ceil(n["steps"] / per_epoch)
    logged = {}
    stub = tensorboard_stub(logged)
    modules = dict(
        zip(
            MODULES,
            common.import_official(
                os.path.join(path, CODE), *MODULES, stubs={"tensorboard_logger": stub}
            ),
            strict=True,
        )
    )
    util, dataset_module = modules["datasets.util"], modules["datasets.dataset"]
    transform = view_transform(util, modules["datasets.RandAugment"], n)
    jigsaw = jigsaw_transform(util, n) if n["jigsaw"] else None
    make = common.encoder_factory(n, base_encoder)

    def make_encoder():  # networks/resnet.py's ResNet: pooled features, no fc
        encoder = make(1)
        encoder.fc = torch.nn.Identity()
        return encoder

    def build_loader(opt, ngpus_per_node):  # datasets/util.py:339-373 with our images
        loader = common.seeded_loader(
            n,
            None,
            wrap=lambda data: instance_dataset(
                dataset_module, data.images, data.labels, transform, jigsaw
            ),
        )
        if len(loader) != per_epoch or opt.batch_size // opt.world_size != n["batch"]:
            raise SystemExit(f"error: {len(loader)} batches an epoch, not {per_epoch}")
        cut = EpochCut(loader, n["steps"])
        return loader.dataset, cut, cut

    built = {}
    main = modules["main_contrast"]
    build_model, build_mem = main.build_model, main.build_mem
    main.build_model = lambda args: built.setdefault("model", build_model(args))
    main.build_mem = lambda args, n_data: built.setdefault("memory", build_mem(args, n_data))
    curve = []
    try:
        with (
            tempfile.TemporaryDirectory() as folder,
            pycontrast_shims(modules, n, build_loader, make_encoder, curve),
            train_ressl.script_argv(command_line(n, epochs, folder)),
        ):
            main.main()
    finally:
        if sys.modules.get("tensorboard_logger") is stub:
            del sys.modules["tensorboard_logger"]
    model = built["model"][0]
    return model, curve, {"encoder": model.encoder, "lr_per_epoch": logged["learning_rate"]}
