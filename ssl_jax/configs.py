"""Config defaults shared by every `configs/*.py` file, and validation before anything compiles.

A config file calls `base_config()` and writes its run's numbers (shared pieces: `configs/common.py`,
which library code never imports). The command line (`--config=X --config.a.b=v`) and scripts load
a config with `load('configs/X.py[:arg]', ['a.b=v', ...])`, each override `apply_override`'s, whose
`ConfigError` is the command line's one error line. Config files import this module, so it imports
neither jax nor the modules that check a config: `validation.validate` checks a whole config, and
`config_checks` holds `ConfigError` and the value checks every module may use.
"""

from __future__ import annotations

import ast
import difflib
import importlib.util
import os
from collections.abc import Sequence

import ml_collections

from ssl_jax.config_checks import ConfigError


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
    # The generator of name='color_fashion_mnist' (data/sources/color_fashion_mnist.py; ignored otherwise):
    # native size 32 or 64 px, seed, tint 'independent' | 'background' | 'fixed' (hue, turns), the
    # skimage photos used as backgrounds (() = all), the fraction of a photo's side a crop covers,
    # the folder of the cached splits ('' = $XDG_CACHE_HOME/ssl_jax or ~/.cache/ssl_jax); and the
    # training views: 'shared' (every view cut from the one generated image) or 'item' (each view
    # composited anew from the item: its own photo crop and tint; evaluation keeps the generated).
    c.data.color_fashion_mnist = ml_collections.ConfigDict(
        dict(
            size=32,
            seed=0,
            tint="independent",
            hue=0.0,
            backgrounds=(),
            background_crop=0.25,
            cache_dir="",
            views="shared",
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

    # target_init: 'copy' (the online network's weights) or 'independent' (its own random init)
    c.ema = ml_collections.ConfigDict(dict(base=0.999, schedule="constant", target_init="copy"))

    c.log_every_steps = 50
    # Weights & Biases, an optional writer beside TensorBoard and metrics.jsonl (ssl_jax/output/writers.py):
    # on when `project` is set (`pip install wandb`); `mode` 'online', 'offline' (files in the
    # workdir, `wandb sync` later) or 'disabled'; a resumed job continues the same W&B run.
    c.wandb = ml_collections.ConfigDict(
        dict(project="", entity="", name="", tags=(), mode="online")
    )
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
    # `probe_fit.L2_GRIDS`); a weighted kNN column (k `knn_k`, τ `knn_temperature`; 0: none).
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


def load(spec: str, overrides: Sequence[str] = ()) -> ml_collections.ConfigDict:
    """`configs/X.py[:arg]` → `get_config(arg)`, then each `'a.b=v'` of `overrides` applied
    (`apply_override`): the command line's config (`--config=X --config.a.b=v`), and scripts'. A
    file that does not exist, an unknown `:arg`, key or a value of the wrong type: `ConfigError`."""
    path, _, arg = spec.partition(":")
    if not os.path.isfile(path):
        raise ConfigError(f"config file {path!r} does not exist")
    name = os.path.splitext(os.path.basename(path))[0]
    module_spec = importlib.util.spec_from_file_location(f"_ssl_jax_config_{name}", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    config = module.get_config(arg or None)
    for assignment in overrides:
        apply_override(config, assignment)
    return config


def runlocal_requested(spec: str) -> bool:
    """Whether `configs/X.py[:arg]`'s argument names `runlocal` (`configs/X.py:runlocal,keys=8`)."""
    arg = spec.partition(":")[2]
    return "runlocal" in [part.split("=")[0].strip() for part in arg.split(",")]


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
    literal when it is one (else kept as a string; `true` / `false` for a bool field); an int given
    for a float field becomes a float; an unknown key or a value of another type: `ConfigError`."""
    key, sep, text = assignment.partition("=")
    if not sep:
        raise ConfigError(
            f"config.{key} has no value; an override is key=value (--config.{key}=VALUE)"
        )
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
    if isinstance(old, bool) and text.lower() in ("true", "false"):
        value = text.lower() == "true"
    wrong = f"config.{key}={value!r} has type {type(value).__name__}; the field holds"
    if old is not None and not isinstance(value, type(old)):
        raise ConfigError(f"{wrong} {type(old).__name__} ({old!r})")
    try:
        node[leaf] = value
    except TypeError:  # a typed placeholder (None until set): `config_dict.placeholder(int)`
        raise ConfigError(f"{wrong} {node.get_ref(leaf).get_type().__name__} (None)") from None


def describe_runlocal(config: ml_collections.ConfigDict, num_train: int) -> str:
    """What a `:runlocal` pretraining config trains on, said by the command line when the run
    starts (after the config is validated): every config of a dataset that is not on a CPU machine
    (CIFAR, STL-10, ImageNet, an image folder) trains on Fashion-MNIST or color_fashion_mnist under
    `:runlocal`, and its own data is not read. `num_train`: the images of its train split."""
    data = config.data
    n = min(num_train, data.train_subset) if data.train_subset else num_train
    what = f"{data.name} (the first {n} training images"
    if data.name == "fashion_mnist" and data.channels != 1:
        what += f", grey repeated over {data.channels} channels"
    return (
        f":runlocal trains on {what}); for a config of another dataset this is a stand-in and its "
        "own data is not read"
    )
