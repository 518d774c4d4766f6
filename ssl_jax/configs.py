"""Config defaults shared by every `configs/*.py` file, and validation before anything compiles.

A config file calls `base_config()`, overrides what its paper says, and `finalize(config, arg)` applies
`:runlocal`; a config that builds on another loads it with `sibling(__file__, name)`. Scripts load
a config with `load('configs/X.py[:arg]')` and override fields with `apply_override(c, 'a.b=v')`.
`validate(config)` (called by `main` before data or compilation) checks keys, types and the
constraints between them, and raises one `ConfigError` naming the key and the allowed values.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import os
import types
import typing

import ml_collections

DATASETS = ("fashion_mnist", "cifar10", "cifar100", "stl10", "imagenet2012", "image_folder")
BACKBONES = ("resnet18", "resnet34", "resnet50")
STEMS = ("imagenet", "cifar")
DTYPES = ("float32", "bfloat16")
CONV_IMPLS = ("auto", "xla", "matmul")  # models/conv.py
JOBS = ("pretrain", "linear_probe", "knn")
EVAL_JOBS = ("linear_probe", "knn")  # jobs on a pretrained encoder (config.init)
PROBE_PROTOCOLS = ("sgd", "fast")
PROBE_INPUTS = ("images", "features")


class ConfigError(ValueError):
    """A config value is invalid; the message names the key and what is allowed."""


def base_config() -> ml_collections.ConfigDict:
    """Defaults every method and dataset starts from (MoCo v2 on ImageNet shapes)."""
    c = ml_collections.ConfigDict()
    c.job = "pretrain"
    c.method = "mocov2"
    c.method_config = ml_collections.ConfigDict()  # the method's Hparams fields
    c.seed = 0
    c.total_steps = -1  # -1: num_epochs * steps_per_epoch
    c.num_epochs = 200.0
    c.global_batch_size = 256

    c.data = ml_collections.ConfigDict()
    c.data.name = "imagenet2012"
    c.data.data_dir = ""
    c.data.manual_dir = ""
    c.data.train_split = "train"
    # >0: use only the first N examples of the train split (tests, runlocal)
    c.data.train_subset = 0
    c.data.eval_train_split = "train"
    c.data.eval_test_split = "validation"
    c.data.image_size = 224
    c.data.eval_crop_fraction = 0.875
    c.data.channels = 3
    c.data.mean = (0.485, 0.456, 0.406)
    c.data.std = (0.229, 0.224, 0.225)
    c.data.views = ("mocov2", "mocov2")
    c.data.recipes = ml_collections.ConfigDict()
    # True: colour/blur/solarize of each recipe run inside the jitted step
    c.data.device_ops = False
    c.data.shuffle_buffer = 50_000
    c.data.cache = False

    c.model = ml_collections.ConfigDict()
    c.model.backbone = "resnet50"
    c.model.stem = "imagenet"
    c.model.width = 1.0
    c.model.dtype = "float32"
    c.model.zero_init_residual = False
    # 'auto': im2col matmul for ≤2-px outputs on CPU, where XLA's conv is slow (models/conv.py)
    c.model.conv_impl = "auto"
    c.model.projector = ml_collections.ConfigDict(
        dict(
            hidden_dims=(2048,),
            out_dim=128,
            hidden_bias=True,
            last_bias=True,
            last_bn=False,
            use_bn=False,
        )
    )
    c.model.predictor = ml_collections.ConfigDict(
        dict(
            enabled=False,
            hidden_dims=(4096,),
            out_dim=256,
            hidden_bias=False,
            last_bias=False,
            last_bn=False,
            use_bn=True,
        )
    )

    c.optim = ml_collections.ConfigDict()
    c.optim.name = "sgd"
    c.optim.base_lr = 0.03
    c.optim.lr_scaling = "none"  # 'linear': lr = base_lr * global_batch_size / 256
    c.optim.momentum = 0.9
    c.optim.nesterov = False
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "cosine"
    c.optim.warmup_epochs = 0.0
    c.optim.decay_epochs = (120.0, 160.0)
    c.optim.decay_factor = 0.1
    c.optim.final_lr = 0.0
    c.optim.trust_coefficient = 1e-3
    c.optim.exclude_1d = False

    c.ema = ml_collections.ConfigDict(dict(base=0.999, schedule="constant"))

    c.log_every_steps = 50
    c.checkpoint_every_steps = 1000
    c.keep_checkpoints = 3
    c.knn = ml_collections.ConfigDict(
        dict(every_steps=5000, k=200, temperature=0.07, num_train=-1, num_test=-1, batch_size=256)
    )
    c.final_probe_table = False  # default job: linear probe of pretrained vs random-init vs pixels
    # The default job's probe table: closed-form ridge on standardised features (fast on CPU, also for
    # 784-d raw pixels); 'lbfgs' = softmax regression. The same probe for every row of the table.
    c.probe = ml_collections.ConfigDict(
        dict(num_train=-1, solver="ridge", l2_grid=(1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0))
    )
    # In-training evaluators (ssl_jax/evaluate/evaluators.py): name -> dict(type=..., every_steps=...,
    # <its own keys>); every_steps N > 0: at N, 2N, ... and the last step; 0: the last step only;
    # -1: never. (c.knn / c.probe / c.final_probe_table above are the old keys, unused by the loop.)
    c.evals = ml_collections.ConfigDict()
    c.evals.knn = dict(
        type="knn",
        every_steps=5000,
        k=200,
        temperature=0.07,
        num_train=-1,
        num_test=-1,
        batch_size=256,
    )
    return c


def sibling(config_file: str, name: str) -> types.ModuleType:
    """Load `<name>.py` from the folder of `config_file` (a config passes its `__file__`) as a
    module: `configs/` is not a package, so this is how a config reuses another's `build`."""
    path = os.path.join(os.path.dirname(os.path.abspath(config_file)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_ssl_jax_config_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load(spec: str) -> ml_collections.ConfigDict:
    """`configs/X.py[:arg]` → `get_config(arg)`, as `--config=` does (for scripts and notebooks)."""
    path, _, arg = spec.partition(":")
    if not os.path.isfile(path):
        raise ConfigError(f"config file {path!r} does not exist")
    return sibling(path, os.path.splitext(os.path.basename(path))[0]).get_config(arg or None)


def apply_override(c: ml_collections.ConfigDict, assignment: str) -> None:
    """`'a.b=value'` applied in place, as `--config.a.b=value` does: the value is parsed as a Python
    literal when it is one (else kept as a string); an int given for a float field becomes a float;
    an unknown key or a value of another type raises `ConfigError`."""
    key, sep, text = assignment.partition("=")
    if not sep:
        raise ConfigError(f"an override is key=value, got {assignment!r}")
    *parents, leaf = key.split(".")
    node = c
    for part in parents:
        if part not in node:
            raise ConfigError(f"config.{key}: {part!r} is not a key of the config")
        node = node[part]
    if leaf not in node:
        raise ConfigError(f"config.{key} is not a key of the config")
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        value = text
    old = node[leaf]
    if isinstance(old, float) and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if isinstance(old, tuple) and isinstance(value, list):
        value = tuple(value)
    if old is not None and not isinstance(value, type(old)):
        raise ConfigError(
            f"config.{key}={value!r} has type {type(value).__name__}; "
            f"the field holds {type(old).__name__} ({old!r})"
        )
    node[leaf] = value


def runlocal(c: ml_collections.ConfigDict) -> None:
    """Shrink a config in place to a CPU run of seconds: tiny encoder, few steps, small queue/bank."""
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
    c.knn.every_steps = 1_000_000
    c.knn.num_train = 256
    c.knn.num_test = 128
    c.knn.batch_size = 64
    c.knn.k = 20
    c.probe.num_train = 512


def finalize(c: ml_collections.ConfigDict, arg: str | None) -> ml_collections.ConfigDict:
    """Apply the `get_config(arg)` argument: '' or 'runlocal'."""
    args = [a for a in (arg or "").split(",") if a]
    for a in args:
        if a == "runlocal":
            runlocal(c)
        else:
            raise ConfigError(f"config argument {a!r} is not known; allowed: 'runlocal'")
    return c


def _allowed(key: str, value, allowed) -> None:
    if value not in allowed:
        raise ConfigError(f"config.{key}={value!r} is not allowed; allowed values: {list(allowed)}")


def hparams_from_config(hparams_cls, config: ml_collections.ConfigDict):
    """Build a method's frozen `Hparams` from `config.method_config`, rejecting unknown keys/types."""
    fields = {f.name: f for f in dataclasses.fields(hparams_cls)}
    hints = typing.get_type_hints(hparams_cls)
    kwargs = {}
    for key, value in config.method_config.items():
        if key not in fields:
            raise ConfigError(
                f"config.method_config.{key} is not a field of method {config.method!r}; "
                f"allowed keys: {sorted(fields)}"
            )
        expected = hints[key]
        origin = typing.get_origin(expected) or expected
        if origin is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if origin in (int, float, bool, str) and not isinstance(value, origin):
            raise ConfigError(
                f"config.method_config.{key}={value!r} has type {type(value).__name__}; "
                f"expected {origin.__name__}"
            )
        if origin is tuple and isinstance(value, list):
            value = tuple(value)
        kwargs[key] = value
    return hparams_cls(**kwargs)


def validate(config: ml_collections.ConfigDict, *, num_devices: int) -> None:
    """Checks that need no data and no compilation. Raises ConfigError."""
    _allowed("job", config.job, JOBS)
    if config.job in EVAL_JOBS:
        validate_eval_job(config, num_devices=num_devices)
        return
    _allowed("data.name", config.data.name, DATASETS)
    _allowed("model.backbone", config.model.backbone, BACKBONES)
    _allowed("model.stem", config.model.stem, STEMS)
    _allowed("model.dtype", config.model.dtype, DTYPES)
    _allowed("model.conv_impl", config.model.conv_impl, CONV_IMPLS)
    _allowed("optim.name", config.optim.name, ("sgd", "lars"))
    _allowed("optim.schedule", config.optim.schedule, ("cosine", "step", "constant"))
    _allowed("optim.lr_scaling", config.optim.lr_scaling, ("linear", "none"))
    _allowed("ema.schedule", config.ema.schedule, ("constant", "cosine"))
    _allowed("data.channels", config.data.channels, (1, 3))
    if config.global_batch_size <= 0 or config.global_batch_size % num_devices:
        raise ConfigError(
            f"config.global_batch_size={config.global_batch_size} must be a positive multiple of "
            f"the device count ({num_devices}); allowed: {num_devices}, {2 * num_devices}, ..."
        )
    if config.total_steps == 0 or config.total_steps < -1:
        raise ConfigError(
            f"config.total_steps={config.total_steps}: allowed -1 (from epochs) or > 0"
        )
    for key in ("mean", "std"):
        if len(config.data[key]) != config.data.channels:
            raise ConfigError(
                f"config.data.{key} has {len(config.data[key])} values but "
                f"config.data.channels={config.data.channels}; give one value per channel"
            )
    for view in config.data.views:
        if view not in config.data.recipes:
            raise ConfigError(
                f"config.data.views names recipe {view!r}; allowed: {sorted(config.data.recipes)}"
            )
    if not 0.0 <= config.ema.base <= 1.0:
        raise ConfigError(f"config.ema.base={config.ema.base} must be in [0, 1]")


def validate_eval_job(config: ml_collections.ConfigDict, *, num_devices: int) -> None:
    """Checks of a linear_probe / knn job config (`configs/linear_probe.py`, `configs/knn.py`);
    its data and model come from the pretraining run (`config.init`) and are checked there."""
    if not config.get("init"):
        raise ConfigError(
            f"config.init is empty: the {config.job} job needs the pretraining workdir "
            "(or one of its checkpoints/<step> folders): --config.init=WORKDIR"
        )
    _allowed("encoder.weights", config.encoder.weights, ("online", "target"))
    if config.get("model") and config.model.get("dtype") is not None:
        _allowed("model.dtype", config.model.dtype, DTYPES)
    if config.job == "knn":
        if config.knn.batch_size <= 0 or config.knn.batch_size % num_devices:
            raise ConfigError(
                f"config.knn.batch_size={config.knn.batch_size} must be a positive multiple of the "
                f"device count ({num_devices})"
            )
        if not config.knn.ks or min(config.knn.ks) <= 0:
            raise ConfigError(
                f"config.knn.ks={config.knn.ks} must be positive ints, e.g. (20, 200)"
            )
        return
    probe = config.probe
    _allowed("probe.protocol", probe.protocol, PROBE_PROTOCOLS)
    _allowed("probe.solver", probe.get("solver", "lbfgs"), ("lbfgs", "ridge"))
    _allowed("probe.input", probe.input, PROBE_INPUTS)
    for key in ("batch_size", "eval_batch_size"):
        if probe[key] <= 0 or probe[key] % num_devices:
            raise ConfigError(
                f"config.probe.{key}={probe[key]} must be a positive multiple of the device count "
                f"({num_devices}); allowed: {num_devices}, {2 * num_devices}, ..."
            )
    if probe.protocol == "sgd":
        if probe.num_epochs <= 0:
            raise ConfigError(f"config.probe.num_epochs={probe.num_epochs} must be > 0")
        _allowed("probe.optim.name", probe.optim.name, ("sgd", "lars"))
        _allowed("probe.optim.schedule", probe.optim.schedule, ("cosine", "step", "constant"))
        _allowed("probe.optim.lr_scaling", probe.optim.lr_scaling, ("linear", "none"))


def is_runlocal(arg: str | None) -> bool:
    return "runlocal" in (arg or "").split(",")


def use_local_data(c: ml_collections.ConfigDict, *, channels: int = 3) -> None:
    """`:runlocal` of a config whose dataset is not on this machine (ImageNet, CIFAR, STL-10): train on the
    first examples of Fashion-MNIST (Debian's dataset-fashion-mnist) instead, keeping the architecture."""
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


def use_cifar10(c: ml_collections.ConfigDict) -> None:
    """CIFAR-10 at 32 px: evaluation on the 'test' split without a centre crop, the MoCo/SCE CIFAR
    code's mean/std (`CIFAR10_MEAN/STD`), decoded images cached in host memory."""
    c.data.name = "cifar10"
    c.data.eval_test_split = "test"
    c.data.image_size = 32
    c.data.eval_crop_fraction = 1.0
    c.data.mean, c.data.std = CIFAR10_MEAN, CIFAR10_STD
    c.data.cache = True


FASHION_MNIST_MEAN = (0.2860,)
FASHION_MNIST_STD = (0.3530,)
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2023, 0.1994, 0.2010)  # as the MoCo/SCE CIFAR code
CIFAR100_MEAN = (0.5071, 0.4865, 0.4409)
CIFAR100_STD = (0.2009, 0.1984, 0.2023)
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
