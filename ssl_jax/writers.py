"""Metric writers: TensorBoard event files + console (clu, or tensorboard's own writer without
TensorFlow) and `metrics.jsonl` in the workdir."""

from __future__ import annotations

import importlib.util
import json
import os
import time
from typing import Any

import jax
import numpy as np

METRICS_FILE = "metrics.jsonl"


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


def create_writer(workdir: str) -> MultiWriter:
    """TensorBoard + console on process 0 (console only elsewhere) + metrics.jsonl on process 0.
    clu's default writer where TensorFlow is installed (it imports it); without TensorFlow (the
    device pipeline's runs on GPU images that ship JAX only) `EventsWriter` writes the events."""
    os.makedirs(workdir, exist_ok=True)
    if importlib.util.find_spec("tensorflow") is None:
        return MultiWriter(
            [EventsWriter(workdir), JsonlWriter(workdir)] if jax.process_index() == 0 else []
        )
    from clu import metric_writers

    default = metric_writers.create_default_writer(
        workdir, just_logging=jax.process_index() > 0, asynchronous=False
    )
    if jax.process_index() > 0:
        return MultiWriter([default])
    return MultiWriter([default, JsonlWriter(workdir)])


def read_metrics(workdir: str) -> list[dict]:
    """All records of `metrics.jsonl` (a resumed run may repeat steps; later records win)."""
    path = os.path.join(workdir, METRICS_FILE)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
