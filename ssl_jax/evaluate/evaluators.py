"""In-training evaluators, picked by `config.evals` (big_vision style); the train loop knows none of them.

```
config.evals.knn = dict(type='knn', every_steps=5000, k=200, temperature=0.07, num_train=-1,
                        num_test=-1, batch_size=256)
config.evals.probe_table = dict(type='probe_table', every_steps=0, num_train=-1, num_test=-1,
                                solver='lbfgs', l2_grid=(), iterations=100, knn_k=200,
                                knn_temperature=0.07, batch_size=512)
```
`every_steps`: N > 0 → at steps N, 2N, … and at the last step; 0 → only at the last step; -1 → never.

`checked_entries(config, ...)` is every check of `config.evals` (`validation.validate` calls it);
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
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import jax
import ml_collections
import numpy as np
from absl import logging
from jax.sharding import Mesh

from ssl_jax.config_checks import ConfigError, check_allowed, check_range
from ssl_jax.data import datasets, pipeline
from ssl_jax.evaluate import knn
from ssl_jax.evaluate.encoder import (
    FEATURES,
    FeatureFn,
    describe_features,
    sharded_split_features,
    split_features,
)
from ssl_jax.evaluate.probe_fit import L2_GRIDS, SOLVER_NAMES, SOLVERS, fit_linear_probe
from ssl_jax.output import progress

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
      stage_feature_fn: as `feature_fn`, every backbone stage's pooled output concatenated
        (the probe table's `features='stages'`); None: not available.
    """

    mesh: Mesh
    feature_fn: FeatureFn
    random_init: Callable[[], dict]
    workdir: str
    stage_feature_fn: FeatureFn | None = None


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
    """The keys every evaluator takes (`every_steps`, `num_train`, `num_test`, `batch_size`) and
    its schedule. A subclass checks its own keys in `check_keys`."""

    name: str
    every_steps: int

    def should_run(self, step: int, total_steps: int) -> bool:
        return should_run(self.every_steps, step, total_steps)

    @classmethod
    def check_config(
        cls, entry: Mapping, where: str, *, num_devices: int, num_processes: int = 1
    ) -> None:
        """Check the values of an entry of `config.evals` (defaults merged, `where`:
        'evals.<name>'); raises `ConfigError` naming `config.<where>.<key>` and what is allowed.
        Called once per run, by `checked_entries` (the constructor checks nothing). Features are extracted in
        global batches of `batch_size` x `num_processes`, sharded over the `num_devices` devices:
        that product must be a multiple of the device count, but only for an evaluator that runs
        (`every_steps` != -1)."""
        check_range(f"{where}.every_steps", entry["every_steps"], low=-1, integer=True)
        for key in ("num_train", "num_test"):  # -1 = the whole split, N > 0 = its first N
            check_range(f"{where}.{key}", entry[key], low=-1, integer=True)
            if entry[key] == 0:
                raise ConfigError(
                    f"config.{where}.{key}=0: allowed -1 (the whole split) or N > 0 (the first N)"
                )
        batch_size = entry["batch_size"]
        check_range(f"{where}.batch_size", batch_size, low=1, integer=True)
        if entry["every_steps"] != -1 and (batch_size * num_processes) % num_devices:
            if num_processes == 1:
                raise ConfigError(
                    f"config.{where}.batch_size={batch_size} must be a positive multiple of the "
                    f"device count ({num_devices}); allowed: {num_devices}, {2 * num_devices}, ..."
                )
            raise ConfigError(
                f"config.{where}.batch_size={batch_size} must be a positive number whose product "
                f"with the process count ({num_processes}) is a multiple of the {num_devices} "
                "devices"
            )
        cls.check_keys(entry, where)

    @classmethod
    def check_keys(cls, entry: Mapping, where: str) -> None:
        """The subclass's own keys, checked after the shared ones (`check_config`); none here."""

    def _split_features(self, read, feature_fn, variables, split: str, limit: int, **kwargs):
        """`read` (`encoder.split_features` or `sharded_split_features`) of `split` with this
        evaluator's config, mesh and `batch_size`."""
        return read(
            feature_fn,
            variables,
            self.config,
            split,
            mesh=self.ctx.mesh,
            batch_size=self.batch_size,
            limit=limit,
            **kwargs,
        )


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
        self.name = name
        self.every_steps = int(every_steps)
        self.config, self.ctx = config, ctx
        self.k, self.temperature = int(k), float(temperature)
        self.num_train, self.num_test, self.batch_size = (
            int(num_train),
            int(num_test),
            int(batch_size),
        )
        self._feature_dim: int | None = None

    @classmethod
    def check_keys(cls, entry: Mapping, where: str) -> None:
        check_range(f"{where}.k", entry["k"], low=1, integer=True)
        check_range(f"{where}.temperature", entry["temperature"], low=0.0, low_open=True)

    def _features(self, variables, split: str, limit: int):
        if self._feature_dim is None:
            size, channels = int(self.config.data.image_size), int(self.config.data.channels)
            image = jax.ShapeDtypeStruct((1, size, size, channels), np.uint8)
            self._feature_dim = int(jax.eval_shape(self.ctx.feature_fn, variables, image).shape[-1])
        return self._split_features(
            sharded_split_features,
            self.ctx.feature_fn,
            variables,
            split,
            limit,
            feature_dim=self._feature_dim,
        )

    def run(self, state, step: int) -> dict[str, float]:
        data = self.config.data
        variables = _variables(state)
        progress.say(f"step {step}: kNN monitor (embedding train and test) ...")
        began = time.perf_counter()
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
        seconds = progress.format_seconds(time.perf_counter() - began)
        progress.say(f"step {step}: kNN top-1 {100 * top1:.2f}% ({seconds})")
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
    -1), with a weighted kNN column (`knn.weighted_knn`, k `knn_k`, τ `knn_temperature`, cosine on
    the unstandardised features; `knn_k=0`: none). The probe is `probe_fit.fit_linear_probe`:
    `solver='lbfgs'` multinomial logistic regression, 'ridge' the closed form; `l2_grid` empty =
    the solver's own grid (`probe_fit.L2_GRIDS`). Prints the table (its first line names the
    probe, the grid and the sizes), writes `probe_table.txt` (process 0) and returns
    `probe/top1`, `probe/random_init_top1`, `probe/raw_pixels_top1` and the kNN column as
    `probe/knn_top1`, `probe/random_init_knn_top1`, `probe/raw_pixels_knn_top1`."""

    KEYS = {
        "pretrained": "probe/top1",
        "random init": "probe/random_init_top1",
        "raw pixels": "probe/raw_pixels_top1",
    }
    KNN_KEYS = {
        "pretrained": "probe/knn_top1",
        "random init": "probe/random_init_knn_top1",
        "raw pixels": "probe/raw_pixels_knn_top1",
    }
    SOLVERS = SOLVERS
    # what the encoder rows are probed on: 'pooled' (the papers' protocol) or 'stages', in the
    # words of the probe and kNN jobs (`encoder.describe_features`)
    FEATURES = FEATURES

    def __init__(
        self,
        name: str,
        config: ml_collections.ConfigDict,
        ctx: EvalContext,
        *,
        every_steps: int = 0,
        num_train: int = -1,
        num_test: int = -1,
        solver: str = "lbfgs",
        l2_grid: tuple[float, ...] = (),
        iterations: int = 100,
        knn_k: int = 200,
        knn_temperature: float = 0.07,
        batch_size: int = 512,
        features: str = "pooled",
    ):
        self.name = name
        self.every_steps = int(every_steps)
        self.config, self.ctx = config, ctx
        self.num_train, self.num_test = int(num_train), int(num_test)
        self.batch_size = int(batch_size)
        self.solver = solver
        self.l2_grid = tuple(float(x) for x in (l2_grid or L2_GRIDS[solver]))
        self.iterations = int(iterations)
        self.knn_k, self.knn_temperature = int(knn_k), float(knn_temperature)
        self.features = features
        if features == "stages" and ctx.stage_feature_fn is None:  # before any training
            raise ValueError(f"evals.{name}.features='stages': this run has no stage features")
        self._random: dict | None = None

    @classmethod
    def check_keys(cls, entry: Mapping, where: str) -> None:
        check_allowed(f"{where}.solver", entry["solver"], cls.SOLVERS)
        check_allowed(f"{where}.features", entry["features"], tuple(cls.FEATURES))
        for value in entry["l2_grid"]:  # empty: the solver's own grid
            check_range(f"{where}.l2_grid", value, low=0.0, low_open=True)
        check_range(f"{where}.iterations", entry["iterations"], low=1, integer=True)
        check_range(f"{where}.knn_k", entry["knn_k"], low=0, integer=True)
        check_range(f"{where}.knn_temperature", entry["knn_temperature"], low=0.0, low_open=True)

    def _features(self, variables, split: str, limit: int = -1):
        fn = self.ctx.stage_feature_fn if self.features == "stages" else self.ctx.feature_fn
        return self._split_features(split_features, fn, variables, split, limit)

    def _evaluate(self, train, test) -> dict:
        return probe_and_knn(
            train,
            test,
            l2_grid=self.l2_grid,
            solver=self.solver,
            iterations=self.iterations,
            knn_k=self.knn_k,
            knn_temperature=self.knn_temperature,
        )

    def title(self, num_train: int, num_test: int, feature_dim: int) -> str:
        """The table's first line: the probe, the encoder rows' features (`feature_dim` wide), its
        l2 grid and selection, the sizes, the kNN."""
        data = self.config.data
        grid = ", ".join(f"{v:g}" for v in sorted(self.l2_grid))
        line = (
            f"Linear probe: {SOLVER_NAMES[self.solver]} on standardised frozen features; "
            f"features: {describe_features(self.features, feature_dim)}; "
            f"l2 chosen from ({grid}) on a held-out 10% of train; {data.name}: "
            f"train {num_train} ({data.eval_train_split}), test {num_test} "
            f"({data.eval_test_split})"
        )
        if self.knn_k:
            line += f"; kNN: weighted, k {self.knn_k}, τ {self.knn_temperature:g}"
        return line + ":"

    def run(self, state, step: int) -> dict[str, float]:
        config, limit = self.config, self.num_train
        train_split, test_split = config.data.eval_train_split, config.data.eval_test_split
        if self._random is None:
            self._random = self.ctx.random_init()
        encoders = {"pretrained": _variables(state), "random init": self._random}
        print(
            f"Linear probe ({SOLVER_NAMES[self.solver]}"
            f"{', kNN' if self.knn_k else ''}): features of {train_split} and {test_split} for "
            "the pretrained encoder, the same encoder at random init, and raw pixels",
            flush=True,
        )
        results, timings = {}, {}
        sizes = (0, 0, 0)
        for name, variables in encoders.items():
            print(f"  probe: {name} …", flush=True)
            t0 = time.time()
            tr = self._features(variables, train_split, limit)
            te = self._features(variables, test_split, self.num_test)
            results[name] = self._evaluate(tr, te)
            timings[name] = time.time() - t0
            sizes = (len(tr[1]), len(te[1]), tr[0].shape[1])
        print("  probe: raw pixels …", flush=True)
        t0 = time.time()
        results["raw pixels"] = self._evaluate(
            raw_pixels(config, train_split, limit, self.batch_size),
            raw_pixels(config, test_split, self.num_test, self.batch_size),
        )
        timings["raw pixels"] = time.time() - t0
        knn_head = f" {'kNN top-1':>9}" if self.knn_k else ""
        lines = [
            self.title(*sizes),
            f"{'encoder':<12} {'top-1':>7} {'top-5':>7} {'l2':>7} {'iters':>5}{knn_head} "
            f"{'time':>7}",
        ]
        for name, r in results.items():
            iters = str(r["iterations"]) if "iterations" in r else "-"
            knn_cell = f" {100 * r['knn_top1']:8.2f}%" if self.knn_k else ""
            lines.append(
                f"{name:<12} {100 * r['top1']:6.2f}% {100 * r['top5']:6.2f}% {r['l2']:7.0e} "
                f"{iters:>5}{knn_cell} {timings[name]:6.1f}s"
            )
        table = "\n".join(lines)
        print(table, flush=True)
        if jax.process_index() == 0:
            with open(os.path.join(self.ctx.workdir, PROBE_TABLE_FILE), "w") as f:
                f.write(table + "\n")
        scalars = {self.KEYS[name]: float(r["top1"]) for name, r in results.items()}
        if self.knn_k:
            scalars.update({self.KNN_KEYS[n]: float(r["knn_top1"]) for n, r in results.items()})
        return scalars


def probe_args(pt) -> dict:
    """`fit_linear_probe`'s arguments from a `probe_table` config block, as the probe table uses
    them (an empty grid is the solver's own)."""
    return dict(l2_grid=tuple(pt.l2_grid) or None, solver=pt.solver, iterations=pt.iterations)


def probe_and_knn(
    train, test, *, l2_grid, solver: str, iterations: int, knn_k: int, knn_temperature: float
) -> dict:
    """One probe-table row from (features, labels) of train and test: `fit_linear_probe`'s result
    plus `knn_top1` (`knn.weighted_knn`, k `knn_k`, τ `knn_temperature`; `knn_k=0`: no kNN)."""
    result = fit_linear_probe(*train, *test, l2_grid=l2_grid, solver=solver, iterations=iterations)
    if knn_k:
        knn_result = knn.weighted_knn(*train, *test, k=knn_k, temperature=knn_temperature)
        result["knn_top1"] = knn_result["top1"]
    return result


EVALUATORS: dict[str, type] = {"knn": KnnEvaluator, "probe_table": ProbeTableEvaluator}
_NEEDS_LABELS = (KnnEvaluator, ProbeTableEvaluator)


def checked_entries(
    config: ml_collections.ConfigDict, *, num_devices: int, num_processes: int = 1
) -> tuple[tuple[str, type, dict], ...]:
    """Every check of `config.evals`, in config order: each entry a known `type` with only its
    keys (`eval_entry`), their values checked by the evaluator class (`check_config`). Returns
    `(name, class, keys)` per entry (defaults merged), what `build_evaluators` builds from. Called
    by `validation.validate` (a run's one check), or by `build_evaluators` when not given them."""
    out = []
    for name, entry in (config.get("evals") or {}).items():
        cls, kwargs = eval_entry(name, entry)
        cls.check_config(
            kwargs, f"evals.{name}", num_devices=num_devices, num_processes=num_processes
        )
        out.append((name, cls, kwargs))
    return tuple(out)


def build_evaluators(
    config: ml_collections.ConfigDict, ctx: EvalContext, entries=None
) -> list[Evaluator]:
    """One evaluator per entry of `config.evals`, in config order, from `entries`: the checked
    entries `validation.validate` returned (`Validated.evals`); when None they are checked here
    (`checked_entries`: ConfigError for an unknown type or key or a bad value, before anything is
    compiled). An evaluator that needs labels is skipped (with a log line) when the eval splits
    have none."""
    if entries is None:
        entries = checked_entries(
            config, num_devices=ctx.mesh.size, num_processes=jax.process_count()
        )
    evaluators = []
    for name, cls, kwargs in entries:
        if kwargs.get("every_steps", 0) == -1:  # off: its data is not touched
            continue
        if cls in _NEEDS_LABELS and not all(
            datasets.has_labels(config.data, split)
            for split in (config.data.eval_train_split, config.data.eval_test_split)
        ):
            logging.warning("config.evals.%s skipped: the eval splits have no labels", name)
            continue
        evaluators.append(cls(name, config, ctx, **kwargs))
    return evaluators


def evaluator_defaults(cls_or_type) -> dict:
    """`{key: default}` of an evaluator type's config keys (its keyword arguments): the one place
    `validation.validate` learns which keys an evaluator takes and what a missing one means."""
    import inspect

    cls = EVALUATORS[cls_or_type] if isinstance(cls_or_type, str) else cls_or_type
    params = inspect.signature(cls.__init__).parameters.values()
    return {p.name: p.default for p in params if p.kind == inspect.Parameter.KEYWORD_ONLY}


def eval_entry(name: str, entry) -> tuple[type, dict]:
    """The generic checks of `config.evals[name]`: a dict with a known `type` and only that type's
    keys. Returns the evaluator class and the entry's keys (less `type`) with the evaluator's
    defaults merged in; the class's `check_config` checks their values."""
    where, types = f"evals.{name}", sorted(EVALUATORS)
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
    defaults = evaluator_defaults(kind)
    unknown = [key for key in entry if key not in defaults]
    if unknown:
        raise ConfigError(
            f"config.{where}.{unknown[0]} is not a key of a {kind!r} evaluator; "
            f"allowed keys: {['type', *defaults]}"
        )
    return EVALUATORS[kind], {**defaults, **entry}
