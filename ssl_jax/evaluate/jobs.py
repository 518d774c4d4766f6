"""What the `linear_probe` and `knn` jobs share: their config keys, the pretraining run's config
with the job's data overrides, the label checks and the encoder.

Job config (`configs/linear_probe.py`, `configs/knn.py`):
```
config.job        'linear_probe' | 'knn'
config.init       pretraining workdir (latest checkpoint) or a checkpoint W/checkpoints/<step>
config.seed       int
config.encoder.weights   'online' | 'target' (EMA / momentum encoder)
config.model.dtype       None = the run's; 'float32' | 'bfloat16'
config.data.<key>        None = the pretraining run's value; see DATA_OVERRIDES
config.<probe|knn>.features  'pooled' (last stage) | 'stages' (every stage's pool, concatenated)
```
Nothing is written before every check has passed (run found, same architecture, labelled splits).
Long phases (loading the encoder, embedding a split) print `progress.phase` lines.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os

import ml_collections
from ml_collections import config_dict

from ssl_jax import models, optim
from ssl_jax.config_checks import ConfigError, check_allowed
from ssl_jax.data import datasets
from ssl_jax.data.sources import image_folder
from ssl_jax.evaluate.encoder import FEATURES, Encoder, FeatureFn, describe_features, load_encoder
from ssl_jax.output import progress

# config.data keys a job may override (None = keep the pretraining run's value). The normalisation
# (mean, std) and channels stay the encoder's: they are part of the model.
DATA_OVERRIDES = {
    "name": str,
    "data_dir": str,
    "manual_dir": str,
    "eval_train_split": str,
    "eval_test_split": str,
    "image_size": int,
    "eval_crop_fraction": float,
    "cache": bool,
    "shuffle_buffer": int,
}

# The config block of each job that holds its own keys, `features` among them.
JOB_BLOCKS = {"linear_probe": "probe", "knn": "knn"}
PROBE_PROTOCOLS = ("sgd", "fast")
PROBE_INPUTS = ("images", "features")

# Classes of the labelled splits (image_folder: its class sub-folders).
NUM_CLASSES = {
    "fashion_mnist": 10,
    "color_fashion_mnist": 10,
    "cifar10": 10,
    "cifar100": 100,
    "stl10": 10,
    "imagenet2012": 1000,
}


def job_config(job: str) -> ml_collections.ConfigDict:
    """The keys every evaluation job has (module docstring)."""
    c = ml_collections.ConfigDict()
    c.job = job
    c.init = ""
    c.seed = 0
    c.encoder = ml_collections.ConfigDict(dict(weights="online"))
    c.model = ml_collections.ConfigDict(dict(dtype=config_dict.placeholder(str)))
    c.data = ml_collections.ConfigDict(
        {key: config_dict.placeholder(kind) for key, kind in DATA_OVERRIDES.items()}
    )
    return c


@dataclasses.dataclass
class JobInputs:
    encoder: Encoder
    config: ml_collections.ConfigDict  # the pretraining config with the job's data overrides
    num_classes: int
    features: str = "pooled"  # what is probed: a key of `encoder.FEATURES`

    @property
    def stages(self) -> bool:
        return self.features == "stages"

    @property
    def feature_dim(self) -> int:
        return self.encoder.feature_dim_of(self.stages)

    def feature_fn(self) -> FeatureFn:
        """The encoder's jitted `(variables, uint8 images) → features` of the job's features."""
        return self.encoder.feature_fn(self.config.data, stages=self.stages)

    def describe_features(self) -> str:
        """`features: stages (every stage's pool, 960-d)`: how the job's lines name them."""
        return f"features: {describe_features(self.features, self.feature_dim)}"

    def embedding(self, key: str, limit: int) -> contextlib.AbstractContextManager:
        """The progress phase of embedding split `config.data.<key>` (its first `limit` images
        when > 0); the first one also compiles the encoder's forward."""
        data = self.config.data
        split = data[key]
        total = datasets.num_examples(data, split)
        count = min(limit, total) if limit > 0 else total
        return progress.phase(
            f"embedding {data.name} {split} ({count} images, {self.features} features)"
        )


def eval_data_config(
    job_config: ml_collections.ConfigDict, run_config
) -> ml_collections.ConfigDict:
    """The pretraining run's config with the job's non-None `config.data` overrides applied."""
    config = ml_collections.ConfigDict(run_config.to_dict())
    for key in DATA_OVERRIDES:
        value = job_config.data.get(key)
        if value is not None:
            config.data[key] = value
    return config


def num_classes(data_config, split: str) -> int:
    name = data_config.name
    if name in NUM_CLASSES:
        return NUM_CLASSES[name]
    # image_folder: one class per sub-folder, as image_folder.py labels them
    return len(set(image_folder.list_folder(image_folder.folder_for_split(data_config, split))[1]))


def check_labelled(config, splits: tuple[str, ...], job: str) -> None:
    for key in splits:
        split = config.data[key]
        if not datasets.has_labels(config.data, split):
            raise ConfigError(
                f"the {job} job needs labels, but config.data.{key}={split!r} of "
                f"{config.data.name} has none. Pick a labelled split (--config.data.{key}=...) or "
                "a labelled dataset (--config.data.name=...)."
            )


def job_features(job_config: ml_collections.ConfigDict) -> str:
    """`config.<probe|knn>.features` of a job ('pooled' when the key is absent); its allowed values
    are checked by `validate_eval_job`."""
    return job_config[JOB_BLOCKS[job_config.job]].get("features", "pooled")


def prepare(job_config: ml_collections.ConfigDict, mesh=None, *, validated=None) -> JobInputs:
    """Validate the job, load the encoder, resolve the data; writes nothing. `validated`:
    `validation.validate`'s result for `job_config` (`Validated`, passed by `main`: nothing is
    checked again); None — a library call — runs `validate_eval_job` here."""
    num_devices = mesh.size if mesh is not None else _device_count()
    if validated is None:
        validate_eval_job(job_config, num_devices=num_devices)
    else:
        validated.require(job_config, num_devices=num_devices)
    features = job_features(job_config)
    what = f"loading the encoder from {job_config.init} ({job_config.job}, features: {features})"
    with progress.phase(what):
        encoder = load_encoder(
            job_config.init,
            weights=job_config.encoder.weights,
            model_config={"dtype": job_config.model.get("dtype")},
            mesh=mesh,
        )
    config = eval_data_config(job_config, encoder.config)
    _allowed_name(config.data.name)
    check_labelled(config, ("eval_train_split", "eval_test_split"), job_config.job)
    classes = num_classes(config.data, config.data.eval_train_split)
    return JobInputs(encoder, config, classes, features)


def _allowed_name(name: str) -> None:
    if name not in datasets.NAMES:
        raise ConfigError(
            f"config.data.name={name!r} is not allowed; allowed values: {list(datasets.NAMES)}"
        )


def _device_count() -> int:
    import jax

    return jax.device_count()


def write_json(path: str, record: dict) -> None:
    """Atomic JSON write (tmp file + rename)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(record, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def validate_eval_job(config: ml_collections.ConfigDict, *, num_devices: int) -> None:
    """Checks of a linear_probe / knn job config (`configs/linear_probe.py`, `configs/knn.py`);
    its data and model come from the pretraining run (`config.init`) and are checked there."""
    if not config.get("init"):
        raise ConfigError(
            f"config.init is empty: the {config.job} job needs the pretraining workdir "
            "(or one of its checkpoints/<step> folders): --config.init=WORKDIR"
        )
    check_allowed("encoder.weights", config.encoder.weights, ("online", "target"))
    block = JOB_BLOCKS[config.job]
    check_allowed(f"{block}.features", job_features(config), tuple(FEATURES))
    if config.get("model") and config.model.get("dtype") is not None:
        check_allowed("model.dtype", config.model.dtype, models.DTYPE_CHOICES)
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
        optim.check_config(probe.optim, "probe.optim")
