"""Linear-probe and kNN accuracy of several pretraining configs × seeds at the same budget: the
evidence tables of docs/experiments/ (SCE vs ReSSL vs MoCo v2, JCL vs MoCo v2).

    python experiments/compare_methods.py --workdir=runs/compare --seeds=0,1,2 \
        --configs=configs/sce_fashion_mnist.py,configs/ressl_fashion_mnist.py,configs/mocov2_fashion_mnist.py \
        [--config='configs/interclr_fashion_mnist.py method_config.sampler=hard' ...] \
        [--set=model.width=0.5 --set=total_steps=900 ...]

Every `--set` override is applied to every config, so all runs share the budget (model, batch,
steps, optimiser) and differ only in what the configs set that is not overridden (the method, its
views). `--config` (repeatable, after the `--configs` list) adds one config with overrides of its
own, `'PATH[:ARG] KEY=VALUE ...'` (e.g. a method's variants: InterCLR's samplers, its margin), named
in the table by the path and those overrides. Each run pretrains in `WORKDIR/<config>_s<seed>` (a finished or interrupted run resumes
from its checkpoints, so the script can be re-run), then fits the config's linear probe
(`config.evals.probe_table`: solver, l2 grid, train size, batch size) on frozen online-backbone
features of the labelled train split and scores the test split, and runs the weighted kNN
(`knn_k`, `knn_temperature`) on the same features: `--features` (default `pooled`, the pooled last
stage, the papers' protocol; `stages`) for every row, whatever a config's own key says. Baselines with the same probe: the first config's
encoder at random init (one per seed) and raw pixels. Results are cached in each run's
`compare.json`; the script prints a Markdown table (mean ± sample standard deviation over the
seeds, then every seed's value; `--spread=half-range` for the older tables) and writes it to
`WORKDIR/table.md`.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from ssl_jax import configs  # noqa: E402


def protocol(config) -> str:
    """The probe and kNN a config's `evals.probe_table` names, in the words every result records:
    'lbfgs on the pooled features, kNN k 200 τ 0.07'."""
    pt = config.evals.probe_table
    return f"{pt.solver} on the {pt.features} features, kNN k {pt.knn_k} τ {pt.knn_temperature}"


def evaluate(config, variables, exp) -> dict[str, float]:
    """Probe and kNN top-1 of one encoder's variables, as the default job's probe table
    (`config.evals.probe_table`: its solver, `features`, `knn_k` / `knn_temperature`)."""
    from ssl_jax.evaluate.evaluators import probe_and_knn, probe_args
    from ssl_jax.evaluate.run_features import extract_features

    tr_split, te_split = config.data.eval_train_split, config.data.eval_test_split
    pt = config.evals.probe_table
    read = lambda split, n: extract_features(
        exp, variables, split, n, batch_size=pt.batch_size, stages=pt.features == "stages"
    )
    tr, te = read(tr_split, pt.num_train), read(te_split, -1)
    result = probe_and_knn(
        tr, te, **probe_args(pt), knn_k=pt.knn_k, knn_temperature=pt.knn_temperature
    )
    return {"probe": result["top1"], "knn": result.get("knn_top1")}


def run_one(config, workdir: str, with_random: bool, pretrain_only: bool = False) -> dict | None:
    """Pretrains (or resumes) one run and evaluates it. `pretrain.json` keeps the pretraining time
    (a later evaluation with another probe re-uses the checkpoint); `compare.json` the figures of
    the probe solver it names."""
    from ssl_jax import train

    solver, features = config.evals.probe_table.solver, config.evals.probe_table.features
    cached, timed = os.path.join(workdir, "compare.json"), os.path.join(workdir, "pretrain.json")
    if os.path.exists(cached):
        with open(cached) as f:
            result = json.load(f)
        # older caches were written by the ridge probe on pooled features; another solver or
        # other features re-fit from the checkpoint
        same = (result.get("probe_solver", "ridge"), result.get("probe_features", "pooled"))
        if same == (solver, features) and ("random" in result or not with_random):
            return None if pretrain_only else result
    pretrain = None
    if os.path.exists(timed):
        with open(timed) as f:
            pretrain = json.load(f)
    elif os.path.exists(cached):
        pretrain = {k: result[k] for k in ("pretrain_s", "steps")}
    if pretrain_only and pretrain is not None:
        return None
    t0 = time.time()
    state = train.train_and_evaluate(config, workdir)  # restores a finished run's checkpoint
    if pretrain is None:
        pretrain = {"pretrain_s": time.time() - t0, "steps": int(state.step)}
        with open(timed, "w") as f:
            json.dump(pretrain, f)
    if pretrain_only:
        return None
    exp = train.build_experiment(config)
    t0 = time.time()
    result = {
        "pretrained": evaluate(
            config, {"params": state.params, "batch_stats": state.batch_stats}, exp
        ),
        **pretrain,
        "probe_solver": solver,
        "probe_features": features,
    }
    if with_random:
        init = train.init_or_restore(exp, None)
        result["random"] = evaluate(
            config, {"params": init.params, "batch_stats": init.batch_stats}, exp
        )
    result["eval_s"] = time.time() - t0
    with open(cached, "w") as f:
        json.dump(result, f, indent=1)
    return result


def raw_pixels(config) -> dict[str, float]:
    """Probe and kNN top-1 on the raw pixels of the config's eval splits (the same probe and kNN
    as `evaluate`'s)."""
    from ssl_jax.evaluate.evaluators import probe_and_knn, probe_args, raw_pixels

    pt = config.evals.probe_table
    tr = raw_pixels(config, config.data.eval_train_split, pt.num_train, pt.batch_size)
    te = raw_pixels(config, config.data.eval_test_split, -1, pt.batch_size)
    result = probe_and_knn(
        tr, te, **probe_args(pt), knn_k=pt.knn_k, knn_temperature=pt.knn_temperature
    )
    return {"probe": result["top1"], "knn": result.get("knn_top1")}


def mean_std(values, scale: float = 1.0) -> tuple[float, float]:
    """Mean and sample std (n − 1; 0 for one value) of `scale · values`."""
    v = scale * np.asarray(values, float)
    return float(v.mean()), float(np.std(v, ddof=1)) if len(v) > 1 else 0.0


def summary(values: list[float], spread: str = "std") -> str:
    """'mean ± spread (seed values)' in %; spread: sample std (n − 1) or half the range."""
    v = 100 * np.asarray(values)
    per_seed = " / ".join(f"{x:.2f}" for x in v)
    mean, width = mean_std(v)
    if spread != "std":
        width = (v.max() - v.min()) / 2
    return f"{mean:.2f} ± {width:.2f} ({per_seed})"


def parse_entry(entry: str) -> tuple[str, str, list[str]]:
    """'PATH[:ARG] KEY=VALUE ...' → (table name, config path with arg, overrides)."""
    path, *overrides = entry.split()
    name = os.path.splitext(os.path.basename(path.partition(":")[0]))[0]
    name += path.partition(":")[2] and f"_{path.partition(':')[2].replace(',', '_')}"
    for item in overrides:
        if "=" not in item:
            raise SystemExit(f"--config {entry!r}: {item!r} is not KEY=VALUE")
        key, _, value = item.partition("=")
        name += f" {key.rpartition('.')[2]}={value}"
    return name, path, overrides


def load_config(path: str, assignments, seed: int):
    """`configs.load(path)` with the `key=value` `assignments` and `seed`, its in-training probe
    and kNN off (`run_one` fits them itself) when it has them."""
    config = configs.load(path)
    for assignment in assignments:
        configs.apply_override(config, assignment)
    config.seed = seed
    if "evals" in config:
        config.evals.probe_table.every_steps = -1
        config.evals.knn.every_steps = -1
    return config


def compare(
    entries, seeds, sets, workdir: str, pretrain_only=False, features="pooled"
) -> tuple[dict, object]:
    """Pretrains and evaluates every (entry, seed) in `workdir` (cached): rows {name: [result]} and
    the first config (its random init and raw pixels are the baselines). `pretrain_only`: train
    every run first (evaluate later), rows are then empty. `features`: what every row's probe and
    kNN read (`evals.probe_table.features`), set on every config last: one protocol per table."""
    os.makedirs(workdir, exist_ok=True)
    rows, first_config = {}, None
    for index, (name, path, overrides) in enumerate(entries):
        for seed in seeds:
            config = load_config(path, [*sets, *overrides], seed)
            config.evals.probe_table.features = features
            first_config = first_config or config
            print(f"== {name} seed {seed}", flush=True)
            run_dir = os.path.join(workdir, f"{name.replace(' ', '_')}_s{seed}")
            result = run_one(config, run_dir, index == 0, pretrain_only)
            if result is not None:
                rows.setdefault(name, []).append(result)
    return rows, first_config


def table(rows: dict, first_config, spread: str) -> list[str]:
    """Markdown rows: one per config, then random init and raw pixels."""
    lines = [
        "| encoder | linear probe top-1 (%) | kNN top-1 (%) | pretrain time (s) |",
        "|---|---|---|---|",
    ]
    for name, results in rows.items():
        lines.append(
            f"| {name} | {summary([r['pretrained']['probe'] for r in results], spread)} "
            f"| {summary([r['pretrained']['knn'] for r in results], spread)} "
            f"| {np.mean([r['pretrain_s'] for r in results]):.0f} |"
        )
    first = next(iter(rows.values()))
    lines.append(
        f"| random init | {summary([r['random']['probe'] for r in first], spread)} "
        f"| {summary([r['random']['knn'] for r in first], spread)} | – |"
    )
    raw = raw_pixels(first_config)
    lines.append(f"| raw pixels | {100 * raw['probe']:.2f} | {100 * raw['knn']:.2f} | – |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", default="", help="comma-separated config paths[:arg]")
    parser.add_argument(
        "--config", action="append", default=[], help="'PATH[:ARG] KEY=VALUE ...' (repeatable)"
    )
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--spread", choices=("std", "half-range"), default="std")
    parser.add_argument("--workdir")
    parser.add_argument("--set", action="append", default=[], help="key=value for every config")
    parser.add_argument(
        "--pretrain-only", action="store_true", help="train every run, evaluate in a later call"
    )
    parser.add_argument(
        "--features",
        choices=("pooled", "stages"),
        default="pooled",
        help="what every row's probe and kNN read (pooled: the papers' protocol)",
    )
    args = parser.parse_args()
    if not args.workdir:
        raise SystemExit("give --workdir")
    seeds = [int(s) for s in args.seeds.split(",")]
    entries = [parse_entry(p) for p in args.configs.split(",") if p] + [
        parse_entry(e) for e in args.config
    ]
    if not entries:
        raise SystemExit("give --configs and/or --config")
    rows, first_config = compare(
        entries, seeds, args.set, args.workdir, args.pretrain_only, args.features
    )
    if args.pretrain_only:
        return
    lines = [
        f"{first_config.data.name} ({first_config.data.eval_test_split}): {len(seeds)} seeds "
        f"({args.seeds}), mean ± {args.spread} (every seed), "
        f"overrides: {' '.join(args.set) or 'none'}; every row: {protocol(first_config)}",
        "",
        *table(rows, first_config, args.spread),
    ]
    table_md = "\n".join(lines)
    print(table_md, flush=True)
    with open(os.path.join(args.workdir, "table.md"), "w") as f:
        f.write(table_md + "\n")


if __name__ == "__main__":
    main()
