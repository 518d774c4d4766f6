"""In-training evaluators, picked by `config.evals` (big_vision style); the train loop knows none of them.

```
config.evals.knn = dict(type='knn', every_steps=5000, k=200, temperature=0.07, num_train=-1,
                        num_test=-1, batch_size=256)
config.evals.probe_table = dict(type='probe_table', every_steps=0, num_train=-1, solver='ridge',
                                l2_grid=(1e-5, ..., 1.0), batch_size=500)
```
`every_steps`: N > 0 → at steps N, 2N, … and at the last step; 0 → only at the last step; -1 → never.

`build_evaluators(config, ctx)` returns one object per entry (`EVALUATORS[type]`), each with `name`,
`every_steps`, `should_run(step, total_steps)` and `run(state, step) -> {metric: value}` (it prints its
own progress / result line; the loop writes the scalars). The jitted functions an evaluator uses are
built once per run (in its constructor or on its first run) and reused by every later run.

This package never imports `train`: what an evaluator needs of the run (mesh, the jitted feature
function, a random-init encoder for the probe baseline, the workdir) comes in an `EvalContext`.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any, Protocol

import jax
import ml_collections
import numpy as np
from absl import logging
from jax.sharding import Mesh

from ssl_jax.configs import ConfigError
from ssl_jax.data import datasets, pipeline
from ssl_jax.evaluate import knn
from ssl_jax.evaluate.encoder import FeatureFn, sharded_split_features, split_features
from ssl_jax.evaluate.linear_probe import fit_linear_probe

PROBE_TABLE_FILE = "probe_table.txt"


@dataclasses.dataclass(frozen=True)
class EvalContext:
    """What evaluators need of a pretraining run (built once by the train loop).

    Attributes:
      mesh: the run's mesh; features are computed sharded `P('data')` over it.
      feature_fn: jitted `(variables, uint8 images [B, H, W, C]) → features [B, D]` (eval-mode BN).
      random_init: `() → {'params', 'batch_stats'}` of the run's model at its initialisation
        (the probe table's 'random init' row); called at most once per run.
      workdir: where file outputs go (`probe_table.txt`).
    """

    mesh: Mesh
    feature_fn: FeatureFn
    random_init: Callable[[], dict]
    workdir: str


class Evaluator(Protocol):
    name: str
    every_steps: int

    def should_run(self, step: int, total_steps: int) -> bool: ...

    def run(self, state: Any, step: int) -> dict[str, float]: ...


def should_run(every_steps: int, step: int, total_steps: int) -> bool:
    """N > 0: at N, 2N, … and at the last step; 0: only at the last step; -1: never."""
    if every_steps < 0:
        return False
    if step == total_steps:
        return True
    return every_steps > 0 and step % every_steps == 0


def _variables(state) -> dict:
    return {"params": state.params, "batch_stats": state.batch_stats}


class _Schedule:
    name: str
    every_steps: int

    def should_run(self, step: int, total_steps: int) -> bool:
        return should_run(self.every_steps, step, total_steps)


class KnnEvaluator(_Schedule):
    """Weighted kNN (k, τ) of the online encoder: train split as the memory, test split as the
    queries, both extracted and ranked sharded on the devices (`knn.sharded_weighted_knn`, as the
    knn job). Returns `eval/knn_top1`, `eval/knn_top5`."""

    def __init__(
        self,
        name: str,
        config: ml_collections.ConfigDict,
        ctx: EvalContext,
        *,
        every_steps: int = 5000,
        k: int = 200,
        temperature: float = 0.07,
        num_train: int = -1,
        num_test: int = -1,
        batch_size: int = 256,
    ):
        self.name, self.every_steps = name, int(every_steps)
        self.config, self.ctx = config, ctx
        self.k, self.temperature = int(k), float(temperature)
        self.num_train, self.num_test, self.batch_size = (
            int(num_train),
            int(num_test),
            int(batch_size),
        )
        if self.k <= 0:
            raise ConfigError(f"config.evals.{name}.k={k} must be > 0")
        _check_batch_size(name, self.batch_size, ctx.mesh)
        self._feature_dim: int | None = None

    def _features(self, variables, split: str, limit: int):
        if self._feature_dim is None:
            size, channels = int(self.config.data.image_size), int(self.config.data.channels)
            image = jax.ShapeDtypeStruct((1, size, size, channels), np.uint8)
            self._feature_dim = int(jax.eval_shape(self.ctx.feature_fn, variables, image).shape[-1])
        return sharded_split_features(
            self.ctx.feature_fn,
            variables,
            self.config,
            split,
            mesh=self.ctx.mesh,
            batch_size=self.batch_size,
            limit=limit,
            feature_dim=self._feature_dim,
        )

    def run(self, state, step: int) -> dict[str, float]:
        data = self.config.data
        variables = _variables(state)
        bank = self._features(variables, data.eval_train_split, self.num_train)
        queries = self._features(variables, data.eval_test_split, self.num_test)
        result = knn.sharded_weighted_knn(
            bank,
            queries,
            mesh=self.ctx.mesh,
            ks=(self.k,),
            temperature=self.temperature,
        )[self.k]
        top1, top5 = float(result["top1"]), float(result["top5"])
        print(f"step {step}: kNN top-1 {100 * top1:.2f}%", flush=True)
        return {"eval/knn_top1": top1, "eval/knn_top5": top5}


def raw_pixels(config, split: str, limit: int, batch_size: int) -> tuple[np.ndarray, np.ndarray]:
    """Flattened pixel values in [0, 1] of a labelled split (the 'no encoder' probe baseline),
    the first `limit` examples when `limit > 0`; read whole on every host."""
    xs, ys = [], []
    for batch in pipeline.eval_iterator(config, split, batch_size=batch_size):
        keep = batch["mask"]
        xs.append(batch["image"][keep].reshape(int(keep.sum()), -1).astype(np.float32) / 255.0)
        ys.append(batch["label"][keep])
        if 0 < limit <= sum(len(y) for y in ys):
            break
    x, y = np.concatenate(xs), np.concatenate(ys)
    return (x[:limit], y[:limit]) if limit > 0 else (x, y)


class ProbeTableEvaluator(_Schedule):
    """Linear probe (same probe, same data) of the pretrained encoder, the same encoder at random
    init and raw pixels (the first `num_train` / `num_test` examples of the eval splits, all when
    -1). Prints the table, writes `probe_table.txt` (process 0) and returns
    `probe/top1`, `probe/random_init_top1`, `probe/raw_pixels_top1`."""

    KEYS = {
        "pretrained": "probe/top1",
        "random init": "probe/random_init_top1",
        "raw pixels": "probe/raw_pixels_top1",
    }
    SOLVERS = ("ridge", "lbfgs")

    def __init__(
        self,
        name: str,
        config: ml_collections.ConfigDict,
        ctx: EvalContext,
        *,
        every_steps: int = 0,
        num_train: int = -1,
        num_test: int = -1,
        solver: str = "ridge",
        l2_grid: tuple[float, ...] = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0),
        batch_size: int = 512,
    ):
        self.name, self.every_steps = name, int(every_steps)
        self.config, self.ctx = config, ctx
        self.num_train, self.num_test = int(num_train), int(num_test)
        self.batch_size = int(batch_size)
        if solver not in self.SOLVERS:
            raise ConfigError(
                f"config.evals.{name}.solver={solver!r} is not allowed; "
                f"allowed values: {list(self.SOLVERS)}"
            )
        self.solver, self.l2_grid = solver, tuple(float(x) for x in l2_grid)
        _check_batch_size(name, self.batch_size, ctx.mesh)
        self._random: dict | None = None

    def _features(self, variables, split: str, limit: int = -1):
        return split_features(
            self.ctx.feature_fn,
            variables,
            self.config,
            split,
            mesh=self.ctx.mesh,
            batch_size=self.batch_size,
            limit=limit,
        )

    def _fit(self, train, test) -> dict:
        return fit_linear_probe(*train, *test, l2_grid=self.l2_grid, solver=self.solver)

    def run(self, state, step: int) -> dict[str, float]:
        config, limit = self.config, self.num_train
        train_split, test_split = config.data.eval_train_split, config.data.eval_test_split
        if self._random is None:
            self._random = self.ctx.random_init()
        encoders = {"pretrained": _variables(state), "random init": self._random}
        print(
            f"Linear probe ({self.solver}): features of {train_split} and {test_split} for the "
            "pretrained encoder, the same encoder at random init, and raw pixels",
            flush=True,
        )
        results, timings = {}, {}
        for name, variables in encoders.items():
            print(f"  probe: {name} …", flush=True)
            t0 = time.time()
            tr = self._features(variables, train_split, limit)
            te = self._features(variables, test_split, self.num_test)
            results[name] = self._fit(tr, te)
            timings[name] = time.time() - t0
        print("  probe: raw pixels …", flush=True)
        t0 = time.time()
        results["raw pixels"] = self._fit(
            raw_pixels(config, train_split, limit, self.batch_size),
            raw_pixels(config, test_split, self.num_test, self.batch_size),
        )
        timings["raw pixels"] = time.time() - t0
        lines = [
            f"Linear probe on {config.data.name} ({test_split}), "
            f"features of {train_split}{'' if limit <= 0 else f' (first {limit})'}:",
            f"{'encoder':<14} {'top-1':>7} {'top-5':>7} {'l2':>8} {'time':>7}",
        ]
        for name, r in results.items():
            lines.append(
                f"{name:<14} {100 * r['top1']:6.2f}% {100 * r['top5']:6.2f}% {r['l2']:8.0e} "
                f"{timings[name]:6.1f}s"
            )
        table = "\n".join(lines)
        print(table, flush=True)
        if jax.process_index() == 0:
            with open(os.path.join(self.ctx.workdir, PROBE_TABLE_FILE), "w") as f:
                f.write(table + "\n")
        return {self.KEYS[name]: float(r["top1"]) for name, r in results.items()}


def _check_batch_size(name: str, batch_size: int, mesh: Mesh) -> None:
    # features are extracted in global batches of batch_size x processes, sharded over the mesh
    if batch_size <= 0 or (batch_size * jax.process_count()) % mesh.size:
        raise ConfigError(
            f"config.evals.{name}.batch_size={batch_size} must be a positive number whose product "
            f"with the process count ({jax.process_count()}) is a multiple of the {mesh.size} devices"
        )


EVALUATORS: dict[str, type] = {"knn": KnnEvaluator, "probe_table": ProbeTableEvaluator}
_NEEDS_LABELS = ("knn", "probe_table")


def build_evaluators(config: ml_collections.ConfigDict, ctx: EvalContext) -> list[Evaluator]:
    """One evaluator per entry of `config.evals`, in config order. Raises ConfigError for an
    unknown type or key, before anything is compiled. An evaluator that needs labels is skipped
    (with a log line) when the eval splits have none."""
    evaluators = []
    for name, entry in (config.get("evals") or {}).items():
        entry = dict(entry.to_dict() if hasattr(entry, "to_dict") else entry)
        kind = entry.pop("type", None)
        if kind not in EVALUATORS:
            raise ConfigError(
                f"config.evals.{name}.type={kind!r} is not known; allowed values: {sorted(EVALUATORS)}"
            )
        cls = EVALUATORS[kind]
        allowed = [p for p in _keywords(cls) if p != "self"]
        unknown = sorted(set(entry) - set(allowed))
        if unknown:
            raise ConfigError(
                f"config.evals.{name}.{unknown[0]} is not a key of a {kind!r} evaluator; "
                f"allowed keys: {['type', *allowed]}"
            )
        every = entry.get("every_steps", None)
        if every is not None and (not isinstance(every, int) or every < -1):
            raise ConfigError(
                f"config.evals.{name}.every_steps={every!r}: allowed N > 0 (every N steps and the "
                "last), 0 (the last step only) or -1 (never)"
            )
        if kind in _NEEDS_LABELS and not all(
            datasets.has_labels(config.data, split)
            for split in (config.data.eval_train_split, config.data.eval_test_split)
        ):
            logging.warning("config.evals.%s skipped: the eval splits have no labels", name)
            continue
        evaluators.append(cls(name, config, ctx, **entry))
    return evaluators


def _keywords(cls) -> list[str]:
    return list(evaluator_defaults(cls))


def evaluator_defaults(cls_or_type) -> dict:
    """`{key: default}` of an evaluator type's config keys (its keyword arguments): the one place
    `configs.validate` learns which keys an evaluator takes and what a missing one means."""
    import inspect

    cls = EVALUATORS[cls_or_type] if isinstance(cls_or_type, str) else cls_or_type
    params = inspect.signature(cls.__init__).parameters.values()
    return {p.name: p.default for p in params if p.kind == inspect.Parameter.KEYWORD_ONLY}
