"""Metric writers: TensorBoard event files + console (clu) and `metrics.jsonl` in the workdir."""

from __future__ import annotations

import json
import os
from typing import Any

import jax
import numpy as np
from clu import metric_writers

METRICS_FILE = "metrics.jsonl"


class JsonlWriter(metric_writers.MetricWriter):
    """One JSON object per written step: {"step": s, "train/loss": ..., ...}, appended and flushed."""

    def __init__(self, workdir: str):
        self.path = os.path.join(workdir, METRICS_FILE)

    def write_scalars(self, step: int, scalars: dict[str, Any]) -> None:
        record = {"step": int(step)}
        record.update({k: float(np.asarray(v)) for k, v in scalars.items()})
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")

    def write_summaries(self, step, values, metadata=None):
        pass

    def write_images(self, step, images):
        pass

    def write_videos(self, step, videos):
        pass

    def write_audios(self, step, audios, *, sample_rate):
        pass

    def write_texts(self, step, texts):
        pass

    def write_histograms(self, step, arrays, num_buckets=None):
        pass

    def write_pointcloud(self, step, point_clouds, *, point_colors=None, configs=None):
        pass

    def write_hparams(self, hparams):
        pass

    def flush(self):
        pass

    def close(self):
        pass


def create_writer(workdir: str) -> metric_writers.MetricWriter:
    """TensorBoard + console on process 0 (console only elsewhere) + metrics.jsonl on process 0."""
    os.makedirs(workdir, exist_ok=True)
    default = metric_writers.create_default_writer(
        workdir, just_logging=jax.process_index() > 0, asynchronous=False
    )
    if jax.process_index() > 0:
        return default
    return metric_writers.MultiWriter([default, JsonlWriter(workdir)])


def read_metrics(workdir: str) -> list[dict]:
    """All records of `metrics.jsonl` (a resumed run may repeat steps; later records win)."""
    path = os.path.join(workdir, METRICS_FILE)
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
