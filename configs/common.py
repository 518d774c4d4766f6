"""Pieces the config files share: the `get_config(arg)` argument, dataset blocks and the `:runlocal`
shrink. Each config file writes its own run's numbers and calls these for what is the same everywhere
(a dataset's splits and normalisation, what `:runlocal` does); nothing here picks a method's numbers,
except the blocks one released code base repeats in all its configs (the Ring code's `ring_*`).

A config file is loaded by path (`--config=configs/X.py`, `ssl_jax.configs.load`) and imports
`configs.common` as a package: from the repository root (`python -m` puts it on `sys.path`) or, from
any folder, through the install (`pip install -e .` installs `configs` beside `ssl_jax`). Library
code (`ssl_jax/`) never imports this package.
"""

from __future__ import annotations

import ast
import sys
import types

import ml_collections

from ssl_jax.config_checks import ConfigError
from ssl_jax.data import recipes
from ssl_jax.models import head_config

FASHION_MNIST_MEAN = (0.2860,)
FASHION_MNIST_STD = (0.3530,)
# RGB mean/std of color_fashion_mnist's train split with the default options (seed 0, 32 px).
COLOR_FASHION_MNIST_MEAN = (0.5024, 0.3952, 0.3614)
COLOR_FASHION_MNIST_STD = (0.3078, 0.2751, 0.2768)
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2023, 0.1994, 0.2010)  # as the MoCo/SCE CIFAR code
CIFAR100_MEAN = (0.5071, 0.4865, 0.4409)
CIFAR100_STD = (0.2009, 0.1984, 0.2023)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
STL10_STD = (0.2471, 0.2435, 0.2616)  # SCE code, datamodule/stl10.py normalisation entry


def parse_arg(arg: str | None, **spec) -> types.SimpleNamespace:
    """The `get_config(arg)` argument as flags (big_vision's `parse_arg`): `'runlocal,keys=8'` →
    `namespace(runlocal=True, keys=8)` (not a ConfigDict, where `keys` is a method). Every config
    accepts `runlocal` (default False); `spec` names the config's other arguments with their
    defaults, whose type a given value must have (a bare name sets a bool to True). An unknown name
    raises `ConfigError` listing the allowed ones.
    """
    spec = {"runlocal": False, **spec}
    flags = types.SimpleNamespace(**spec)
    allowed = ", ".join(
        repr(k) if isinstance(v, bool) else f"'{k}=<{type(v).__name__}>'" for k, v in spec.items()
    )
    for item in (arg or "").split(","):
        name, sep, text = item.strip().partition("=")
        if not name:
            continue
        if name not in spec:
            raise ConfigError(f"config argument {item!r} is not known; allowed: {allowed}")
        default = spec[name]
        if not sep:
            if not isinstance(default, bool):
                raise ConfigError(f"config argument {name!r} needs a value: '{name}=...'")
            value = True
        else:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                value = text
            if isinstance(default, float) and isinstance(value, int):
                value = float(value)
            if not isinstance(value, type(default)) or isinstance(value, bool) != isinstance(
                default, bool
            ):
                raise ConfigError(
                    f"config argument {item!r}: {name} takes a {type(default).__name__} "
                    f"(default {default!r})"
                )
        setattr(flags, name, value)
    return flags


def parent_arg(arg: str | None, *own: str) -> str | None:
    """The argument a derived config (`iring_X` = `ir_X` + the ring keys) passes to its parent's
    `get_config`: `arg` without the items that set the child's own names `own`. The child parses
    `arg` with its whole spec first, so an unknown or mistyped item is reported with the child's
    allowed names."""
    items = [i for i in (arg or "").split(",") if i.strip().partition("=")[0] not in own]
    return ",".join(items) or None


def fashion_mnist_data(c: ml_collections.ConfigDict, *, channels: int = 1) -> None:
    """Fashion-MNIST from Debian's dataset-fashion-mnist (or `data.data_dir`): 28 px, evaluation on
    'test' without a centre crop, its mean/std repeated over `channels`, decoded images cached.
    Also what `:runlocal` trains on for a dataset that is not on this machine (with `channels=3`:
    the architecture of a colour config stays)."""
    c.data.name = "fashion_mnist"
    c.data.data_dir = ""
    c.data.train_split = "train"
    c.data.eval_train_split = "train"
    c.data.eval_test_split = "test"
    c.data.image_size = 28
    c.data.eval_crop_fraction = 1.0
    c.data.channels = channels
    c.data.mean = FASHION_MNIST_MEAN * channels
    c.data.std = FASHION_MNIST_STD * channels
    c.data.cache = True


def color_fashion_mnist_data(c: ml_collections.ConfigDict, *, size: int = 32) -> None:
    """color_fashion_mnist (Fashion-MNIST items on skimage photos, `ssl_jax/data/sources/
    color_fashion_mnist.py`) generated at `size` (32 or 64) px: evaluation on 'test' without a
    centre crop, RGB mean/std of the default generation, splits cached in host memory. The
    generator's options are `c.data.color_fashion_mnist` (defaults in `ssl_jax.configs`)."""
    c.data.name = "color_fashion_mnist"
    c.data.data_dir = ""
    c.data.train_split = "train"
    c.data.eval_train_split = "train"
    c.data.eval_test_split = "test"
    c.data.color_fashion_mnist.size = size
    c.data.image_size = size
    c.data.eval_crop_fraction = 1.0
    c.data.channels = 3
    c.data.mean, c.data.std = COLOR_FASHION_MNIST_MEAN, COLOR_FASHION_MNIST_STD
    c.data.cache = True


def small_budget(c: ml_collections.ConfigDict, *, color: bool) -> None:
    """The small Fashion-MNIST runs' shared part (ours, not a paper's; `mocov2_fashion_mnist.py` and
    `mocov2_color_fashion_mnist.py` are the baselines): every training image (60,000 28-px grey
    ones, `fashion_mnist_data`, or with `color` 32-px colour ones, `color_fashion_mnist_data`),
    ResNet-18 with the CIFAR stem at width 1/4 (1/2 with `color`), batch 256, 3 epochs of SGD (lr
    0.06, wd 5e-4, cosine, no warm-up), a log line every 20 steps and a checkpoint every 200, the
    final probe table and no kNN monitor (eval batches of 512, a multiple of 8 devices; the figures
    in docs/ were measured with 500). A config sets its method, views, recipes and heads, and
    changes what its method needs."""
    if color:
        color_fashion_mnist_data(c, size=32)
    else:
        fashion_mnist_data(c, channels=1)
    c.data.update(train_subset=0, shuffle_buffer=60_000)
    c.model.update(backbone="resnet18", stem="cifar", width=0.5 if color else 0.25)
    c.global_batch_size = 256
    c.num_epochs = 3.0
    c.optim.update(
        name="sgd", base_lr=0.06, weight_decay=5e-4, schedule="cosine", warmup_epochs=0.0
    )
    c.log_every_steps = 20
    c.checkpoint_every_steps = 200
    c.evals.knn.update(every_steps=-1, batch_size=512)
    c.evals.probe_table.update(every_steps=0, num_train=-1, batch_size=512)


def cifar10_data(c: ml_collections.ConfigDict) -> None:
    """CIFAR-10 at 32 px: evaluation on the 'test' split without a centre crop, the MoCo/SCE CIFAR
    code's mean/std (`CIFAR10_MEAN/STD`), decoded images cached in host memory."""
    c.data.name = "cifar10"
    c.data.eval_test_split = "test"
    c.data.image_size = 32
    c.data.eval_crop_fraction = 1.0
    c.data.mean, c.data.std = CIFAR10_MEAN, CIFAR10_STD
    c.data.cache = True


def imagenet_data(c: ml_collections.ConfigDict) -> None:
    """ImageNet-1k (tfds `imagenet2012`, `--config.data.manual_dir=`) at 224 px: evaluation on
    'validation' with a 0.875 centre crop, the torchvision mean/std, a 50,000-image shuffle buffer."""
    c.data.name = "imagenet2012"
    c.data.eval_test_split = "validation"
    c.data.image_size = 224
    c.data.eval_crop_fraction = 0.875
    c.data.mean, c.data.std = IMAGENET_MEAN, IMAGENET_STD
    c.data.shuffle_buffer = 50_000


IMAGENET_CANVAS = 512  # ImageNet's photos are mostly 500 px or less on their longer side


def colour_ops_on_device(c: ml_collections.ConfigDict) -> None:
    """`data.device_ops=True`: the host crops and flips, the jitted step runs the colour ops. For the
    224-px MoCo v2 recipe (IR, InterCLR, JCL, the Ring methods) a 16-core GPU host cannot feed the
    step otherwise (views per CPU-second against the step's demand: docs/performance.md, "Input
    pipeline against the step's demand"); on a CPU host the two placements cost the same (same
    cores). Call after setting the recipes.

    On ImageNet-sized photos also `data.device_crops=IMAGENET_CANVAS`: the host only decodes, and
    the step cuts each view's crop, resize and flip from the image sent once on a 512-px canvas
    (`data/device/canvas.cut_views`, within a grey level of the host's views), which turns MoCo v2's
    whole loop from input-bound to step-bound (docs/performance.md, "The whole loop on one H100");
    images over 512 px on a side are shrunk to fit before they are cropped
    (`data/host/geometry.fit_canvas`), the one difference from host crops; `device_crops=0` gives
    the host's crops. On Fashion-MNIST (the `:runlocal` data) a 32-px canvas runs the same path on
    CPU."""
    c.data.device_ops = True
    fashion = c.data.name in ("fashion_mnist", "color_fashion_mnist")
    c.data.device_crops = 32 if fashion else IMAGENET_CANVAS


def image_folder_data(c: ml_collections.ConfigDict, *, test_split: str = "val") -> None:
    """An image folder with one sub-folder per class under `train/` and `<test_split>/`; set the
    folder with `--config.data.data_dir=`. A file tf cannot decode stops the run before it
    compiles, named (`--config.data.bad_images=skip`: left out with a warning)."""
    c.data.name = "image_folder"
    c.data.data_dir = ""
    c.data.train_split = "train"
    c.data.eval_train_split = "train"
    c.data.eval_test_split = test_split


def runlocal(c: ml_collections.ConfigDict) -> None:
    """`:runlocal`, last in `get_config`: shrink a config in place to a CPU run of seconds — width
    1/8, 6 steps of 32 images, heads of at most 64 hidden / 32 output units, the first 256 training
    images, small kNN / probe sets, BN group sizes scaled with the batch (the same number of
    groups). A config that keeps more (the ImageNet ones keep ResNet-50 at full width) sets it
    after this call."""
    _scale_bn_groups(c, 32)
    c.global_batch_size = 32
    c.total_steps = 6
    c.model.width = 0.125
    c.model.dtype = "float32"
    c.model.projector.hidden_dims = tuple(min(h, 64) for h in c.model.projector.hidden_dims)
    c.model.projector.out_dim = min(c.model.projector.out_dim, 32)
    c.model.predictor.hidden_dims = tuple(min(h, 64) for h in c.model.predictor.hidden_dims)
    c.model.predictor.out_dim = c.model.projector.out_dim
    c.data.train_subset = 256
    c.data.shuffle_buffer = 256
    c.log_every_steps = 2
    c.checkpoint_every_steps = 4
    if "knn" in c.evals:
        c.evals.knn.update(every_steps=1_000_000, num_train=256, num_test=128, batch_size=64, k=20)
    if "probe_table" in c.evals:
        c.evals.probe_table.update(num_train=512, num_test=256, batch_size=64)


def _scale_bn_groups(c: ml_collections.ConfigDict, batch: int) -> None:
    """BN group sizes (images) of `c.method_config` for a global batch of `batch` instead of
    `c.global_batch_size`, keeping the number of groups of every forward."""
    for key in ("query_bn_group_size", "key_bn_group_size"):
        size = c.method_config.get(key, 0)
        if not size:
            continue
        if (size * batch) % c.global_batch_size:
            raise ConfigError(
                f"config.method_config.{key}={size}: cannot keep its number of BN groups at "
                f"the runlocal batch {batch} (from {c.global_batch_size})"
            )
        c.method_config[key] = size * batch // c.global_batch_size


IMAGENET_TRAIN_EXAMPLES = 1_281_167
# A bank sharded over the devices needs a row count they divide: the first 1,281,152 = 128 × 10,009
# training images (15 of 1,281,167 left out) split evenly over 1, 2, 4, ..., 128 devices.
IMAGENET_BANK_ROWS = 1_281_152


def interclr_scaled(num_examples: int) -> dict:
    """InterCLR's bank-relative numbers for a smaller data set: the official ImageNet ratios kept
    (C 10,000, K 16,384, pool 128,000 of 1,281,167 rows: 0.78 %, 1.28 %, 9.99 %), so a cluster
    holds ~128 images on average and the semi-hard pool is ~10 % of the bank, as on ImageNet.
    K and the pool are rounded to multiples of 64, C to a multiple of 10."""
    ratio = num_examples / IMAGENET_TRAIN_EXAMPLES
    return dict(
        num_clusters=max(10, round(10_000 * ratio / 10) * 10),
        num_negatives=max(64, round(16_384 * ratio / 64) * 64),
        pool_size=max(64, round(128_000 * ratio / 64) * 64),
    )


def interclr_runlocal(c: ml_collections.ConfigDict) -> None:
    """`:runlocal` InterCLR state for the 256-image bank: 8 clusters, 32 negatives from a pool of 64,
    clusters of fewer than 4 images refilled, k-means 5 iterations."""
    c.method_config.update(
        bank_size=256,
        num_clusters=8,
        num_negatives=32,
        pool_size=64,
        min_cluster_size=4,
        kmeans_iters=5,
        queue_size=256,
    )


def jcl_views(view: str, num_keys: int) -> tuple[str, ...]:
    """JCL's views from M' (`:keys=N` of the jcl_* configs): view 0 the query, views 1..M' the keys,
    all of recipe `view` (the official `MultiCropsTransform(k_crops=M' + 1)`)."""
    if not isinstance(num_keys, int) or num_keys < 1:
        raise ConfigError(f"config argument keys={num_keys!r}: allowed keys=1, keys=2, ...")
    return (view,) * (num_keys + 1)


def infomin_views(c: ml_collections.ConfigDict, *, jigsaw: bool, jigsaw_size: int = 0) -> None:
    """InfoMin's views at `c.data.image_size`: two aug-"D" crops (`recipes.infomin`) and, with
    `jigsaw`, the jigsaw mosaic (`recipes.jigsaw`: RRC to `jigsaw_size`, 3 × 3 cells, one patch
    of 64/85 of a cell each; PyContrast: 255 px, cells of 85, patches of 64). Without the
    jigsaw, `c.method_config.jigsaw` is set False."""
    size = c.data.image_size
    views = {"infomin": recipes.infomin(size)}
    if jigsaw:
        jigsaw_size = jigsaw_size or round(size * 255 / 224)
        patch = max(1, round((jigsaw_size // 3) * 64 / 85))
        views["jigsaw"] = recipes.jigsaw(jigsaw_size, grid=3, patch=patch)
    else:
        c.method_config.jigsaw = False
    c.data.views = ("infomin", "infomin", "jigsaw") if jigsaw else ("infomin", "infomin")
    c.data.recipes = ml_collections.ConfigDict(views)


def stl10_labelled_data(c: ml_collections.ConfigDict) -> None:
    """STL-10 (96 px) as the Ring code uses it: pretraining on the 5,000 labelled 'train' images
    (not 'unlabelled'), evaluation on 'train' / 'test' without a centre crop, ImageNet mean/std."""
    c.data.update(
        name="stl10",
        train_split="train",
        eval_train_split="train",
        eval_test_split="test",
        image_size=96,
        eval_crop_fraction=1.0,
        mean=IMAGENET_MEAN,
        std=IMAGENET_STD,
        cache=True,
    )


def ring_code_transforms(
    c: ml_collections.ConfigDict, view: str, num_views: int, mocov2_32x32: bool
) -> None:
    """The Ring/CNCE code's CIFAR / STL-10 input (`src/datasets`), `num_views` views of recipe
    `view`. Default (every released config): images UPSAMPLED to 224 px, RRC(224, 0.2–1), grayscale
    0.2, colour jitter (0.4, 0.4, 0.4, 0.4) always, flip (`recipes.instance_discrimination`),
    ImageNet mean/std; evaluation Resize 256 / CenterCrop 224. `mocov2_32x32` (the code's
    `mocov2_32x32_transforms` flag): MoCo v2's recipe at 32 px with its blur p 0.5
    (`recipes.ring_mocov2_32x32`), evaluation Resize 32 / CenterCrop 32. Call after the dataset
    block (`:runlocal` keeps the Fashion-MNIST size)."""
    if c.data.name != "fashion_mnist":
        c.data.mean, c.data.std = IMAGENET_MEAN, IMAGENET_STD
        c.data.image_size = 32 if mocov2_32x32 else 224
        c.data.eval_crop_fraction = 1.0 if mocov2_32x32 else 224 / 256
    size = c.data.image_size
    recipe = (
        recipes.ring_mocov2_32x32(size) if mocov2_32x32 else recipes.instance_discrimination(size)
    )
    c.data.views = (view,) * num_views
    c.data.recipes = ml_collections.ConfigDict({view: recipe})


def ring_keys(anneal: str, ball: bool) -> dict:
    """The Ring code's ring keys of `c.method_config` (every released config): outer 0.1
    (`thres_outer`: negatives between the 90th and 99th percentile), inner 0.1 (`thres_inner`; 0
    with `ball`, the ball lesion), the outer fraction's `anneal` ('constant' as the released
    configs, 'linear' the paper's) over at most 100 epochs."""
    return dict(
        ring_outer=0.1, ring_inner=0.0 if ball else 0.1, anneal=anneal, max_anneal_epochs=100.0
    )


def ring_from(
    c: ml_collections.ConfigDict, method: str, anneal: str, ball: bool, anneal_epochs: float = 100.0
) -> ml_collections.ConfigDict:
    """A ring method (`iring`, `mocoring`, `cmcring`) from its baseline's config `c` (IR, MoCo v2,
    CMC): the same numbers with `method` and the ring keys (`ring_keys`), the outer fraction
    annealed over at most `anneal_epochs` (the paper's 100 of 200; 1.5 of the small runs' 3)."""
    c.method = method
    c.method_config.update(ring_keys(anneal, ball), max_anneal_epochs=anneal_epochs)
    return c


def ring_code_training(c: ml_collections.ConfigDict) -> None:
    """The Ring code's encoder and optimisation on CIFAR / STL-10: ResNet-18 with the ImageNet stem
    and an MLP projector 512→512→128 without BN; batch 256, SGD lr 0.03 momentum 0.9 wd 1e-4, 200
    epochs, ×0.1 at int(0.68·200) = 136 and int(0.83·200) = 166; a kNN monitor every 2000 steps
    (ours)."""
    c.model.backbone = "resnet18"
    c.model.stem = "imagenet"
    c.model.projector = head_config((512,), 128, use_bn=False)
    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.update(
        name="sgd",
        base_lr=0.03,
        momentum=0.9,
        weight_decay=1e-4,
        schedule="step",
        decay_epochs=(136.0, 166.0),
    )
    c.evals.knn.every_steps = 2000


def ressl_from_sce(c: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
    """An SCE config turned into its ReSSL baseline (the `ressl_X` configs: SCE's numbers, the loss
    and τ_m changed, as the SCE paper reproduces its baselines with "the same architecture for all
    methods"). The ReSSL loss (`methods/ressl.py`, `losses.ressl`: cross-entropy between the
    target's and the online network's relations to the queue, no positive) takes τ 0.1 and τ_m
    0.04 (the ReSSL paper's values, solo-learn's defaults; the SCE paper uses "the best
    temperatures reported" by ReSSL); SCE's λ (`coeff`, the mix of the one-hot and the relational
    target) goes."""
    c.method = "ressl"
    del c.method_config["coeff"]
    c.method_config.temperature_m = 0.04  # SCE's: 0.05
    return c


def stl10_unlabelled_data(
    c: ml_collections.ConfigDict, *, image_size: int = 96, std: tuple = STL10_STD
) -> None:
    """STL-10 (96 px) as the SCE code's datamodule: pretraining on the 100k 'unlabelled' split (its
    default), evaluation on the labelled 'train' (5k) / 'test' (8k) splits without a centre crop,
    the normalisation of its STL-10 entry (CIFAR-10 mean, std 0.2471/0.2435/0.2616 — probably a
    copy slip in the code, kept as the code's behaviour), not cached (100k × 96 × 96 × 3 decoded
    would take 2.8 GB of host memory). `image_size` and `std` for the configs that crop smaller or
    keep CIFAR-10's std."""
    cifar10_data(c)
    c.data.update(
        name="stl10",
        train_split="unlabelled",
        eval_train_split="train",
        eval_test_split="test",
        image_size=image_size,
        std=std,
        cache=False,
    )


def interclr_branch(bank_rows: int) -> dict:
    """InterCLR's inter branch as the official code sets it in every config (mmselfsup 0.x
    `interclr-moco`): τ 0.2, MarginNCE m −0.5 (subtracted: adds 0.5 to the positive cosine),
    intra / inter weights 0.75 / 0.25, semi-hard sampling, online labels, bank momentum 1.0 (rows
    replaced), centroids every 10 steps, clusters under 20 images refilled, 20 k-means iterations;
    a bank of `bank_rows` rows with C, K and the pool scaled to it (`interclr_scaled`)."""
    return dict(
        inter_temperature=0.2,
        margin=-0.5,
        intra_weight=0.75,
        inter_weight=0.25,
        sampler="semihard",
        bank_size=bank_rows,
        bank_momentum=1.0,
        labels="online",
        centroid_every_steps=10,
        min_cluster_size=20,
        kmeans_iters=20,
        **interclr_scaled(bank_rows),
    )


def interclr_from_mocov2(
    c: ml_collections.ConfigDict, bank_rows: int, *, runlocal: bool, train_subset: int = 0
) -> ml_collections.ConfigDict:
    """A MoCo v2 config turned into InterCLR (the official code's MoCo v2 base plus the inter
    branch, `interclr_branch`) with a bank of `bank_rows`: pretraining on the first `train_subset`
    training images (0: all), or with `runlocal` the state of `interclr_runlocal`."""
    c.method = "interclr"
    c.method_config.update(interclr_branch(bank_rows))
    if runlocal:
        interclr_runlocal(c)
    else:
        c.data.train_subset = train_subset
    return c


def jcl_from_mocov2(c: ml_collections.ConfigDict, num_keys: int) -> ml_collections.ConfigDict:
    """A MoCo v2 config turned into JCL with M' = `num_keys` key crops (the official JCL code is
    MoCo v2's with the multi-key loss): view 0 the query, views 1..M' the keys of the same recipe
    (`jcl_views`), the keys' BN groups M' times larger (the shuffle of all M'·B key crops), λ 2.0
    ramped per epoch as λ·(epoch+1)/epochs (the released `scripts/main_pretrain.sh`'s
    `--jcl_lambda 2.0`)."""
    c.method = "jcl"
    c.method_config.update(
        key_bn_group_size=c.method_config.key_bn_group_size * num_keys,
        num_keys=num_keys,
        lam=2.0,
        lam_schedule="linear_epoch",
    )
    c.data.views = jcl_views(c.data.views[0], num_keys)
    return c


# The old file names of SCE's configs (`scce_X.py`, now `sce_X.py`), kept one release: old → new.
RENAMED = {
    f"scce_{name}": f"sce_{name}"
    for name in (
        "cifar10",
        "cifar100",
        "color_fashion_mnist",
        "fashion_mnist",
        "imagenet",
        "imagenet100",
        "imagenet_multicrop",
        "stl10",
        "tiny_imagenet",
    )
}


def renamed(new, arg: str | None) -> ml_collections.ConfigDict:
    """`new.get_config(arg)` (`new` the module `configs.sce_X`) for its old file name in `RENAMED`,
    with one stderr line that gives the new name."""
    name = new.__name__.rpartition(".")[2]
    old = "scce_" + name.removeprefix("sce_")
    print(
        f"configs/{old}.py is renamed configs/{name}.py; the old name goes in the next release",
        file=sys.stderr,
    )
    return new.get_config(arg)
