"""Metric writers: TensorBoard event files + console (clu, or tensorboard's own writer without
TensorFlow), `metrics.jsonl` in the workdir and, when `config.wandb.project` is set, Weights &
Biases (`WandbWriter`: the same scalars, the config, the pictures; the run's id kept in the workdir,
so a resumed job continues the same W&B run; process 0 only; wandb imported only then)."""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import time
from typing import Any

import jax
import numpy as np

METRICS_FILE = "metrics.jsonl"
WANDB_ID_FILE = "wandb_run_id.txt"  # the W&B run a resumed job continues
WANDB_MODES = ("online", "offline", "disabled")


class JsonlWriter:
    """One JSON object per written step: {"step": s, "train/loss": ..., ...}, appended and flushed."""

    def __init__(self, workdir: str):
        self.path = os.path.join(workdir, METRICS_FILE)

    def write_scalars(self, step: int, scalars: dict[str, Any]) -> None:
        record = {"step": int(step)}
        record.update({k: float(np.asarray(v)) for k, v in scalars.items()})
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")

    def flush(self):
        pass

    def close(self):
        pass


class EventsWriter:
    """TensorBoard scalars without TensorFlow (clu's writer needs it): tensorboard's own event
    file writer, one `simple_value` per scalar."""

    def __init__(self, workdir: str):
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self._writer = EventFileWriter(workdir)

    def write_scalars(self, step: int, scalars: dict[str, Any]) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2

        values = [
            summary_pb2.Summary.Value(tag=k, simple_value=float(np.asarray(v)))
            for k, v in scalars.items()
        ]
        event = event_pb2.Event(
            step=int(step), wall_time=time.time(), summary=summary_pb2.Summary(value=values)
        )
        self._writer.add_event(event)

    def flush(self):
        self._writer.flush()

    def close(self):
        self._writer.close()


class MultiWriter:
    """Every call to each writer."""

    def __init__(self, writers: list):
        self.writers = writers

    def write_scalars(self, step: int, scalars: dict[str, Any]) -> None:
        for w in self.writers:
            w.write_scalars(step, scalars)

    def flush(self):
        for w in self.writers:
            w.flush()

    def close(self):
        for w in self.writers:
            w.close()


def check_wandb_config(wandb_config) -> None:
    """`config.wandb` before anything is built: the mode, and wandb installed when asked for."""
    from ssl_jax.config_checks import ConfigError, check_allowed

    if wandb_config is None:
        return
    check_allowed("wandb.mode", wandb_config.mode, WANDB_MODES)
    for key in ("project", "entity", "name"):
        if not isinstance(wandb_config[key], str):
            raise ConfigError(f"config.wandb.{key}={wandb_config[key]!r}: allowed a string")
    if not all(isinstance(t, str) for t in wandb_config.tags):
        raise ConfigError(f"config.wandb.tags={tuple(wandb_config.tags)!r}: allowed strings")
    if wandb_config.project and importlib.util.find_spec("wandb") is None:
        raise ConfigError(
            f"config.wandb.project={wandb_config.project!r} asks for Weights & Biases, which is "
            "not installed: pip install wandb (or leave config.wandb.project empty)"
        )


def wandb_enabled(config) -> bool:
    wandb_config = config.get("wandb") if config is not None else None
    return bool(wandb_config and wandb_config.project) and jax.process_index() == 0


def wandb_run(workdir: str, config):
    """The job's W&B run, started or (its id in `WANDB_ID_FILE`) resumed; files under `workdir`."""
    import wandb

    w = config.wandb
    id_path = os.path.join(workdir, WANDB_ID_FILE)
    run_id = open(id_path).read().strip() if os.path.exists(id_path) else secrets.token_hex(6)
    run = wandb.init(
        project=w.project,
        entity=w.entity or None,
        name=w.name or None,
        tags=list(w.tags) or None,
        mode=w.mode,
        id=run_id,
        resume="allow",
        dir=workdir,
        config=config.to_dict(),
    )
    if not os.path.exists(id_path):
        with open(id_path, "w") as f:
            f.write(run_id + "\n")
    return run


class WandbWriter:
    """Scalars to a W&B run, against the training step (`step`, W&B's x axis for every metric, so
    the steps a resumed job repeats are logged again rather than dropped)."""

    def __init__(self, workdir: str, config):
        self.run = wandb_run(workdir, config)
        self.run.define_metric("step")
        self.run.define_metric("*", step_metric="step")

    def write_scalars(self, step: int, scalars: dict[str, Any]) -> None:
        values = {k: float(np.asarray(v)) for k, v in scalars.items()}
        self.run.log({**values, "step": int(step)})

    def flush(self):
        pass

    def close(self):
        self.run.finish()


def create_writer(workdir: str, config=None) -> MultiWriter:
    """TensorBoard + console on process 0 (console only elsewhere) + metrics.jsonl on process 0,
    and W&B on process 0 when `config.wandb.project` is set.
    clu's default writer where TensorFlow is installed (it imports it); without TensorFlow (the
    device pipeline's runs on GPU images that ship JAX only) `EventsWriter` writes the events."""
    os.makedirs(workdir, exist_ok=True)
    extra = [WandbWriter(workdir, config)] if wandb_enabled(config) else []
    if importlib.util.find_spec("tensorflow") is None:
        return MultiWriter(
            [EventsWriter(workdir), JsonlWriter(workdir), *extra]
            if jax.process_index() == 0
            else []
        )
    from clu import metric_writers

    default = metric_writers.create_default_writer(
        workdir, just_logging=jax.process_index() > 0, asynchronous=False
    )
    if jax.process_index() > 0:
        return MultiWriter([default])
    return MultiWriter([default, JsonlWriter(workdir), *extra])


def log_pictures(workdir: str, config, paths: list[str]) -> None:
    """The job's pictures (PNG files) to its W&B run, when it has one (process 0)."""
    if not paths or not wandb_enabled(config):
        return
    import wandb

    run = wandb_run(workdir, config)
    run.log({f"pictures/{os.path.splitext(os.path.basename(p))[0]}": wandb.Image(p) for p in paths})
    run.finish()


def read_metrics(workdir: str) -> list[dict]:
    """All records of `metrics.jsonl` (a resumed run may repeat steps; later records win)."""
    path = os.path.join(workdir, METRICS_FILE)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
