"""Config defaults shared by every `configs/*.py` file, and validation before anything compiles.

A config file calls `base_config()` and writes its run's numbers (shared pieces: `configs/common.py`,
which library code never imports). Scripts load a config with `load('configs/X.py[:arg]')` and
override fields with `apply_override(c, 'a.b=v')`. `validate(config)` (called by `main` before data
or compilation) checks keys, types, ranges and the constraints between them, and raises one
`ConfigError` naming the key and the allowed values; the modules that build the model and the
optimiser own their keys' allowed values (`models.check_config`, `optim.check_config`,
`optim.check_ema_config`), and each evaluator class its keys' (`<Evaluator>.check_config`). A method's `Hparams` dataclass states its fields' ranges with `hp_field`,
checked by `hparams_from_config`.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import importlib.util
import math
import os
import typing

import ml_collections

DATASETS = (
    "fashion_mnist",
    "color_fashion_mnist",
    "cifar10",
    "cifar100",
    "stl10",
    "imagenet2012",
    "image_folder",
)
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
    # dtype of the method's queues and banks (the rows sharded over `data`): 'float32' (default) or
    # 'bfloat16', half their memory, e.g. MoCo's queue 65,536 × 128 is 32 MiB in float32, 16 MiB
    # in bfloat16; an ImageNet bank 1,281,167 × 128 (IR, InterCLR) 625 MiB vs 313 MiB, i.e. 78 vs
    # 39 MiB per device on 8. Rows are written rounded to it and read back as float32 (scores,
    # losses and k-means in float32); other state (pointers, centroids, labels) keeps its dtype.
    c.buffer_dtype = "float32"

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
    # >0 (with device_ops): the host only decodes; each image goes to the device once, on a
    # device_crops × device_crops canvas, and the step cuts every view's crop, resize and flip
    c.data.device_crops = 0
    # where the train views are made: 'tfdata' (host tf.data), 'device' (the split in device memory,
    # the whole recipe in the jitted step, no TensorFlow: data/device_pipeline.py) or 'auto'
    c.data.pipeline = "tfdata"
    c.data.shuffle_buffer = 50_000
    c.data.cache = False
    # name='image_folder': every file is decoded once when the folder is first opened (cached by
    # size and mtime); one tf cannot decode stops the run before anything compiles, naming it
    # ('error'), or is left out with a warning line ('skip')
    c.data.bad_images = "error"
    # The generator of name='color_fashion_mnist' (data/color_fashion_mnist.py; ignored otherwise):
    # native size 32 or 64 px, seed, tint 'independent' | 'background' | 'fixed' (hue, turns), the
    # skimage photos used as backgrounds (() = all), the fraction of a photo's side a crop covers,
    # the folder of the cached splits ('' = $XDG_CACHE_HOME/ssl_jax or ~/.cache/ssl_jax).
    c.data.color_fashion_mnist = ml_collections.ConfigDict(
        dict(
            size=32,
            seed=0,
            tint="independent",
            hue=0.0,
            backgrounds=(),
            background_crop=0.25,
            cache_dir="",
        )
    )

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
    c.optim.warmup_from = 0.0  # the warm-up's first lr (PyContrast: 0.01)
    c.optim.warmup_form = "linear"  # 'sce': peak·t/(W−1), SCE's; 'pycontrast': PyContrast's
    c.optim.epoch_offset = 0.0  # cosine over epochs 1..E instead of 0..E−1: 1 (PyContrast)
    c.optim.schedule_unit = "step"  # 'epoch': once per epoch, as the official MoCo v2 / JCL code
    c.optim.decay_epochs = (120.0, 160.0)
    c.optim.decay_factor = 0.1
    c.optim.final_lr = 0.0
    c.optim.trust_coefficient = 1e-3
    c.optim.exclude_1d = False

    c.ema = ml_collections.ConfigDict(dict(base=0.999, schedule="constant"))

    c.log_every_steps = 50
    c.checkpoint_every_steps = 1000
    c.keep_checkpoints = 3
    # Evaluators of a pretraining run, name -> dict(type, every_steps, its own keys). `every_steps`:
    # N > 0 at steps N, 2N, ... and at the last step; 0 only at the last step; -1 never.
    c.evals = ml_collections.ConfigDict()
    # the in-training weighted kNN monitor (evaluate/knn.py) on backbone features
    c.evals.knn = ml_collections.ConfigDict(
        dict(
            type="knn",
            every_steps=5000,
            k=200,
            temperature=0.07,
            num_train=-1,
            num_test=-1,
            batch_size=256,
        )
    )
    # The default job's probe table: linear probe of the pretrained encoder vs the same encoder at
    # random init vs raw pixels, the same probe for every row: multinomial logistic regression by
    # L-BFGS on standardised features ('lbfgs'; 'ridge' = closed-form ridge onto one-hot labels),
    # l2 chosen on a held-out 10% of train from `l2_grid` (empty: the solver's own grid,
    # `linear_probe.L2_GRIDS`); a weighted kNN column (k `knn_k`, τ `knn_temperature`; 0: none).
    # `features`: what the encoder rows are probed on: 'pooled' (the backbone's pooled output, the
    # papers' protocol) or 'stages' (every stage's pooled output, concatenated: 960-d for a
    # ResNet-18; the same for the pretrained and the random-init rows).
    c.evals.probe_table = ml_collections.ConfigDict(
        dict(
            type="probe_table",
            every_steps=-1,
            num_train=-1,
            features="pooled",
            solver="lbfgs",
            l2_grid=(),
            iterations=100,
            knn_k=200,
            knn_temperature=0.07,
            batch_size=256,
        )
    )
    return c


def load(spec: str) -> ml_collections.ConfigDict:
    """`configs/X.py[:arg]` → `get_config(arg)`, as `--config=` does (for scripts and notebooks)."""
    path, _, arg = spec.partition(":")
    if not os.path.isfile(path):
        raise ConfigError(f"config file {path!r} does not exist")
    name = os.path.splitext(os.path.basename(path))[0]
    module_spec = importlib.util.spec_from_file_location(f"_ssl_jax_config_{name}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.get_config(arg or None)


def _suggest(node, name: str) -> str:
    """'; did you mean 'x'? (keys here: [...])' for an unknown key `name` of `node`."""
    if not isinstance(node, ml_collections.ConfigDict):
        return f" ({type(node).__name__} value, no keys)"
    keys = sorted(node.keys())
    close = difflib.get_close_matches(name, keys, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{hint} (keys here: {keys})"


def apply_override(c: ml_collections.ConfigDict, assignment: str) -> None:
    """`'a.b=value'` applied in place, as `--config.a.b=value` does: the value is parsed as a Python
    literal when it is one (else kept as a string); an int given for a float field becomes a float;
    an unknown key or a value of another type raises `ConfigError`."""
    key, sep, text = assignment.partition("=")
    if not sep:
        raise ConfigError(f"an override is key=value, got {assignment!r}")
    *parents, leaf = key.split(".")
    node, path = c, "config"
    for part in parents:
        if not isinstance(node, ml_collections.ConfigDict) or part not in node:
            raise ConfigError(
                f"config.{key}: {part!r} is not a key of {path}{_suggest(node, part)}"
            )
        node, path = node[part], f"{path}.{part}"
    if not isinstance(node, ml_collections.ConfigDict) or leaf not in node:
        raise ConfigError(f"config.{key} is not a key of the config{_suggest(node, leaf)}")
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


def check_allowed(key: str, value, allowed) -> None:
    """`ConfigError` unless `value` is one of `allowed`: `config.<key>=<value> is not allowed; ...`."""
    if value not in allowed:
        raise ConfigError(f"config.{key}={value!r} is not allowed; allowed values: {list(allowed)}")


def _interval(low, high, low_open: bool, high_open: bool) -> str:
    left = "(" if low is None or low_open else "["
    right = ")" if high is None or high_open else "]"
    lo = "-inf" if low is None else repr(low)
    hi = "inf" if high is None else repr(high)
    return f"{left}{lo}, {hi}{right}"


def _in_range(value, low, high, low_open: bool, high_open: bool) -> bool:
    if low is not None and (value <= low if low_open else value < low):
        return False
    return not (high is not None and (value >= high if high_open else value > high))


def check_range(
    key: str,
    value,
    *,
    low=None,
    high=None,
    low_open: bool = False,
    high_open: bool = False,
    integer: bool = False,
) -> None:
    """One-line `ConfigError` unless `value` is a number (an int with `integer`) in the interval:
    `config.<key>=<value>: allowed <interval>`."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or (integer and not isinstance(value, int)):
        kind = "an int" if integer else "a number"
        raise ConfigError(
            f"config.{key}={value!r}: allowed {kind} in {_interval(low, high, low_open, high_open)}"
        )
    if (isinstance(value, float) and math.isnan(value)) or not _in_range(
        value, low, high, low_open, high_open
    ):
        raise ConfigError(
            f"config.{key}={value!r}: allowed {_interval(low, high, low_open, high_open)}"
        )


def hp_field(
    default,
    *,
    low=None,
    high=None,
    low_open: bool = False,
    high_open: bool = False,
    choices=None,
):
    """A method `Hparams` field with its allowed values, checked by `hparams_from_config`:
    `temperature: float = hp_field(0.2, low=0.0, low_open=True)` (τ in (0, inf)), `choices=('a', 'b')`
    for a string. The bounds are inclusive unless `*_open`; None is unbounded."""
    metadata = {"ssl_jax_range": (low, high, low_open, high_open)}
    if choices is not None:
        metadata["ssl_jax_choices"] = tuple(choices)
    return dataclasses.field(default=default, metadata=metadata)


def _check_hp_field(field: dataclasses.Field, value) -> None:
    key = f"method_config.{field.name}"
    choices = field.metadata.get("ssl_jax_choices")
    if choices is not None:
        check_allowed(key, value, choices)
    low, high, low_open, high_open = field.metadata.get("ssl_jax_range", (None,) * 2 + (False,) * 2)
    if low is not None or high is not None:
        check_range(key, value, low=low, high=high, low_open=low_open, high_open=high_open)


# keys of earlier versions, with what replaced them (a clear error for an old config)
RENAMED_HPARAMS = {
    "key_bn_groups": "BN groups are counted in images now, not in devices: "
    "key_bn_group_size = global_batch_size / groups (0 = the whole batch, SyncBN), and "
    "query_bn_group_size for the online encoder (methods/common.py QueryKeyBN)",
}


def hparams_from_config(hparams_cls, config: ml_collections.ConfigDict):
    """Build a method's frozen `Hparams` from `config.method_config`, rejecting unknown keys, types
    and values outside a field's `hp_field` range or choices (given values and defaults alike)."""
    fields = {f.name: f for f in dataclasses.fields(hparams_cls)}
    hints = typing.get_type_hints(hparams_cls)
    kwargs = {}
    for key, value in config.method_config.items():
        if key in RENAMED_HPARAMS and key not in fields:
            raise ConfigError(f"config.method_config.{key} was removed: {RENAMED_HPARAMS[key]}")
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
    hparams = hparams_cls(**kwargs)
    for field in fields.values():
        _check_hp_field(field, getattr(hparams, field.name))
    return hparams


def eval_entry(name: str, entry) -> tuple[type, dict]:
    """The generic checks of `config.evals[name]`: a dict with a known `type` and only that type's
    keys. Returns the evaluator class and the entry's keys (less `type`) with the evaluator's
    defaults merged in; the class's `check_config` checks their values."""
    from ssl_jax.evaluate import evaluators  # the evaluators own their keys, defaults and checks

    where, types = f"evals.{name}", sorted(evaluators.EVALUATORS)
    if isinstance(entry, ml_collections.ConfigDict):
        entry = entry.to_dict()
    if not isinstance(entry, dict):
        raise ConfigError(f"config.{where} must be a dict with a 'type'; allowed types: {types}")
    if "type" not in entry:
        raise ConfigError(
            f"config.{where} must be a dict with a 'type' (got config.{where}.type=None); "
            f"allowed types: {types}"
        )
    entry = dict(entry)
    kind = entry.pop("type")
    check_allowed(f"{where}.type", kind, types)
    defaults = evaluators.evaluator_defaults(kind)
    unknown = [key for key in entry if key not in defaults]
    if unknown:
        raise ConfigError(
            f"config.{where}.{unknown[0]} is not a key of a {kind!r} evaluator; "
            f"allowed keys: {['type', *defaults]}"
        )
    return evaluators.EVALUATORS[kind], {**defaults, **entry}


def validate_evals(config: ml_collections.ConfigDict, *, num_devices: int) -> None:
    """`config.evals`: each entry a known `type` with its own keys (`eval_entry`), their values
    checked by the evaluator class (`check_config`)."""
    for name, entry in config.evals.items():
        cls, kwargs = eval_entry(name, entry)
        cls.check_config(kwargs, f"evals.{name}", num_devices=num_devices)


def validate(config: ml_collections.ConfigDict, *, num_devices: int) -> None:
    """Checks that need no data and no compilation. Raises ConfigError."""
    check_allowed("job", config.job, JOBS)
    if config.job in EVAL_JOBS:
        validate_eval_job(config, num_devices=num_devices)
        return
    # the modules that build the model and the optimiser own their keys' allowed values (imported
    # here: this module must not import jax, and they import it)
    from ssl_jax import models, optim, state

    models.check_config(config.model)
    check_allowed("buffer_dtype", config.get("buffer_dtype", "float32"), tuple(state.BUFFER_DTYPES))
    optim.check_config(config.optim, global_batch_size=config.global_batch_size)
    optim.check_ema_config(config.ema)

    if not isinstance(config.seed, int) or isinstance(config.seed, bool):
        raise ConfigError(f"config.seed={config.seed!r}: allowed an int")
    if config.global_batch_size <= 0 or config.global_batch_size % num_devices:
        raise ConfigError(
            f"config.global_batch_size={config.global_batch_size} must be a positive multiple of "
            f"the device count ({num_devices}); allowed: {num_devices}, {2 * num_devices}, ..."
        )
    check_range("total_steps", config.total_steps, low=-1, integer=True)
    if config.total_steps == 0:
        raise ConfigError(
            f"config.total_steps={config.total_steps}: allowed -1 (from epochs) or > 0"
        )
    if config.total_steps == -1:
        check_range("num_epochs", config.num_epochs, low=0.0, low_open=True)
    for key in ("log_every_steps", "checkpoint_every_steps", "keep_checkpoints"):
        check_range(key, config[key], low=1, integer=True)

    data = config.data
    check_allowed("data.name", data.name, DATASETS)
    if data.name == "color_fashion_mnist":
        from ssl_jax.data import color_fashion_mnist  # the generator owns its options' values

        color_fashion_mnist.check_config(data.get("color_fashion_mnist"))
    from ssl_jax.data import datasets  # the loader owns data.bad_images' values

    datasets.bad_images_policy(data)
    check_allowed("data.channels", data.channels, (1, 3))
    check_range("data.image_size", data.image_size, low=1, integer=True)
    check_range("data.train_subset", data.train_subset, low=0, integer=True)
    check_range("data.shuffle_buffer", data.shuffle_buffer, low=1, integer=True)
    check_range(
        "data.eval_crop_fraction", data.eval_crop_fraction, low=0.0, high=1.0, low_open=True
    )
    for key in ("mean", "std"):
        if len(data[key]) != data.channels:
            raise ConfigError(
                f"config.data.{key} has {len(data[key])} values but "
                f"config.data.channels={data.channels}; give one value per channel"
            )
    for i, value in enumerate(data.std):
        check_range(f"data.std[{i}]", value, low=0.0, low_open=True)
    for view in data.views:
        if view not in data.recipes:
            raise ConfigError(
                f"config.data.views names recipe {view!r}; allowed: {sorted(data.recipes)}"
            )
    check_device_crops(data)
    from ssl_jax.data import device_pipeline  # owns the pipeline's allowed values

    device_pipeline.check_config(data)
    validate_evals(config, num_devices=num_devices)


# Geometry `device_augment.cut_views` does not run (it runs a leading random_resized_crop, flips).
_OTHER_GEOMETRY = ("resize", "center_crop", "jigsaw", "rand_augment")


def device_crop_side(data: ml_collections.ConfigDict) -> int:
    """The canvas side the pipeline uses: `data.device_crops` where `data.device_ops` is on (a
    derived config that turns the device ops off, e.g. the linear probe's, gets host crops), else 0."""
    return int(data.get("device_crops", 0) or 0) if data.get("device_ops", False) else 0


def check_device_crops(data: ml_collections.ConfigDict) -> None:
    """`data.device_crops` (canvas side, 0 = off) needs `data.device_ops` and recipes whose geometry
    is a leading `random_resized_crop` and flips (the ops `device_augment.cut_views` runs)."""
    canvas = data.get("device_crops", 0)
    check_range("data.device_crops", canvas, low=0, integer=True)
    if not canvas:
        return
    if not data.device_ops:
        raise ConfigError(
            f"config.data.device_crops={canvas} needs config.data.device_ops=True (the views are "
            "cut on the device, so their colour ops run there too)"
        )
    for view in data.views:
        ops = [op["op"] for op in data.recipes[view]]
        other = [o for o in ops if o in _OTHER_GEOMETRY]
        if not ops or ops[0] != "random_resized_crop" or other or ops.count(ops[0]) > 1:
            raise ConfigError(
                f"config.data.device_crops={canvas}: recipe {view!r} ({ops}) must start with its "
                f"only random_resized_crop and have no {'/'.join(_OTHER_GEOMETRY)}; set "
                "config.data.device_crops=0 for it"
            )


def validate_eval_job(config: ml_collections.ConfigDict, *, num_devices: int) -> None:
    """Checks of a linear_probe / knn job config (`configs/linear_probe.py`, `configs/knn.py`);
    its data and model come from the pretraining run (`config.init`) and are checked there."""
    if not config.get("init"):
        raise ConfigError(
            f"config.init is empty: the {config.job} job needs the pretraining workdir "
            "(or one of its checkpoints/<step> folders): --config.init=WORKDIR"
        )
    check_allowed("encoder.weights", config.encoder.weights, ("online", "target"))
    if config.get("model") and config.model.get("dtype") is not None:
        from ssl_jax.models import DTYPE_CHOICES  # the model's owner lists them

        check_allowed("model.dtype", config.model.dtype, DTYPE_CHOICES)
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
    check_allowed("probe.protocol", probe.protocol, PROBE_PROTOCOLS)
    check_allowed("probe.solver", probe.get("solver", "lbfgs"), ("lbfgs", "ridge"))
    check_allowed("probe.input", probe.input, PROBE_INPUTS)
    for key in ("batch_size", "eval_batch_size"):
        if probe[key] <= 0 or probe[key] % num_devices:
            raise ConfigError(
                f"config.probe.{key}={probe[key]} must be a positive multiple of the device count "
                f"({num_devices}); allowed: {num_devices}, {2 * num_devices}, ..."
            )
    if probe.protocol == "sgd":
        if probe.num_epochs <= 0:
            raise ConfigError(f"config.probe.num_epochs={probe.num_epochs} must be > 0")
        from ssl_jax import optim

        optim.check_config(probe.optim, "probe.optim")


def describe_runlocal(config: ml_collections.ConfigDict) -> str:
    """What a `:runlocal` pretraining config trains on, said by the command line when the run
    starts: every config of a dataset that is not on a CPU machine (CIFAR, STL-10, ImageNet, an image
    folder) trains on Fashion-MNIST or color_fashion_mnist under `:runlocal`, and its own data is not
    read."""
    data = config.data
    what = f"{data.name} (the first {data.train_subset} training images"
    if data.name == "fashion_mnist" and data.channels != 1:
        what += f", grey repeated over {data.channels} channels"
    return (
        f":runlocal trains on {what}); for a config of another dataset this is a stand-in and its "
        "own data is not read"
    )
