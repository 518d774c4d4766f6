"""Validation of a whole config before anything compiles: `validate(config, num_devices=...)`, the
one entry of every check that needs no data, run once per run.

`main` calls it first (before data, before compilation) and hands its `Validated` result to the
job's entry (`train.train_and_evaluate`, `linear_probe.run`, `knn.run`), which then checks nothing
again; a library call of those entries without one (tests, experiments) validates there instead.
It checks the keys that belong to no one module (job, seed, batch, steps, data shapes, the method's
name) and calls the modules that own the rest, which keep their allowed values beside the code that
uses them: `models.check_config`, `optim.check_config` / `check_ema_config`, `state.BUFFER_DTYPES`,
`image_folder.bad_images_policy`, `color_fashion_mnist.check_config` / `check_views`,
`device/checks.check_device_crops`, `device_pipeline.check_config`, the method's `Hparams`
(`methods.common.method_hparams`: `config.method_config`'s keys, types and ranges),
`evaluators.checked_entries` (`config.evals`), and for a probe or kNN job `jobs.validate_eval_job`.
The checks that need the data (a batch larger than the split, a method's `check_config` against
the split's size) run once in `train.build_experiment` / `TrainInput.prepare`, also before anything
compiles, and raise the same `ConfigError`. This module sits above all of them, so none imports it.
"""

from __future__ import annotations

import ml_collections

from ssl_jax import models, optim, state
from ssl_jax.config_checks import ConfigError, Validated, check_allowed, check_range
from ssl_jax.data import datasets, device_pipeline
from ssl_jax.data.device.checks import check_device_crops
from ssl_jax.data.sources import color_fashion_mnist, image_folder
from ssl_jax.evaluate import evaluators, jobs
from ssl_jax.methods import METHODS
from ssl_jax.methods.common import method_hparams
from ssl_jax.output import writers

JOBS = ("pretrain", "linear_probe", "knn")
EVAL_JOBS = ("linear_probe", "knn")  # jobs on a pretrained encoder (config.init)


def validate(
    config: ml_collections.ConfigDict, *, num_devices: int, num_processes: int = 1
) -> Validated:
    """Every check that needs no data and no compilation; raises ConfigError. Returns the proof
    (`Validated`, with the method's hparams and the checked evaluator entries) a job's entry takes
    so that it does not check again."""
    check_allowed("job", config.job, JOBS)
    if config.job in EVAL_JOBS:
        jobs.validate_eval_job(config, num_devices=num_devices)
        return Validated(config, num_devices, num_processes)
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
    writers.check_wandb_config(config.get("wandb"))

    data = config.data
    check_allowed("data.name", data.name, datasets.NAMES)
    if data.name == "color_fashion_mnist":
        color_fashion_mnist.check_config(data.get("color_fashion_mnist"))
    color_fashion_mnist.check_views(data)
    image_folder.bad_images_policy(data)
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
    device_pipeline.check_config(data)
    evals = evaluators.checked_entries(config, num_devices=num_devices, num_processes=num_processes)
    if config.method not in METHODS:
        raise ConfigError(
            f"config.method={config.method!r} is not known; allowed values: {sorted(METHODS)}"
        )
    hparams = method_hparams(METHODS[config.method], config)  # config.method_config
    return Validated(config, num_devices, num_processes, hparams=hparams, evals=evals)
