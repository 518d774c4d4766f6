"""CPU time of each official implementation beside ours, one run after the other on one core.

    taskset -c 1 python experiments/official/bench_cpu.py                  # every method
    taskset -c 1 python experiments/official/bench_cpu.py --methods=mocov2,scce --steps=100,400

The `official_cpu_long` cells record their CPU seconds, but they ran at low priority beside other
jobs. This runs, per method, the cell's config (seed 0) at two step counts: the official harness
(torch, one thread) and then ours (`train.train_and_evaluate`, its in-training evaluators off), each
in a process of its own, one after the other. Each side's user + system CPU seconds are counted as
the cells count `pretrain_cpu_s`: the training only (data, model, compile and steps; not the
feature extraction or the probe). The two step counts give a fixed cost and a cost per step, and
their sum at the cell's own step count is the CPU minutes of a cell. Pin it to a core no other job
uses (`taskset`): both sides then run on one core, and other jobs on the other core do not count.
Writes `results/official_cpu_time.json` (`page.py` shows it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from experiments import campaign_cells, campaign_runner, grids
from experiments.official import runner

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

GRIDS = {  # the official grid of each method timed here
    **dict.fromkeys(
        (
            "mocov2",
            "jcl",
            "ir",
            "iring",
            "mocoring",
            "scce",
            "ressl",
            "interclr",
            "interclr+offline",
        ),
        "official_cpu_long",
    ),
    "cmc": "official_cpu_long_color",
    "infomin": "official_cpu_long_color",
}
METHODS = tuple(GRIDS)
OUT = os.path.join(ROOT, "results", "official_cpu_time.json")


def cell_config(method: str, steps: int):
    """The grid's seed-0 cell config of `method` at `steps` steps, no evaluator during training."""
    grid = grids.GRIDS[GRIDS[method]]
    (cell,) = [c for c in grids.cells(grid) if c.method == method and c.seed == 0]
    config, _, _ = campaign_cells.cell_config(grid, cell)
    full = int(config.total_steps)
    config.total_steps = steps
    for name in config.evals:
        config.evals[name].every_steps = -1
    return config, full


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(fixed seconds, seconds a step) of the line through two (steps, CPU seconds) points."""
    (s1, c1), (s2, c2) = sorted(points)
    if s1 == s2:
        raise ValueError("two different step counts are needed")
    per_step = (c2 - c1) / (s2 - s1)
    return c1 - per_step * s1, per_step


def official_cpu_s(method: str, steps: int, workdir: str) -> float:
    """The official harness's `pretrain_cpu_s` at `steps` steps (one torch thread)."""
    config, _ = cell_config(method, steps)
    numbers = runner.harness_numbers(config, method, workdir)
    args = [f"--method={method}", "--threads=1", f"--numbers={json.dumps(numbers)}"]
    runner.run_harness([*args, f"--out={workdir}"], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(workdir, "run.json")) as f:
        return float(json.load(f)["pretrain_cpu_s"])


def ours_cpu_s(method: str, steps: int, workdir: str) -> float:
    """Our `pretrain_cpu_s` at `steps` steps, measured in a child process (`--child`)."""
    cmd = [sys.executable, os.path.abspath(__file__), f"--child={method}", f"--steps={steps}"]
    out = subprocess.run(cmd + [f"--workdir={workdir}"], check=True, capture_output=True, text=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["cpu_s"])


def child(method: str, steps: int, workdir: str) -> None:
    """Ours in this process: the config, the experiment, compile and `steps` steps."""
    from ssl_jax import train

    cpu0 = campaign_runner.cpu_seconds()
    config, _ = cell_config(method, steps)
    train.train_and_evaluate(config, workdir)
    print(json.dumps({"cpu_s": round(campaign_runner.cpu_seconds() - cpu0, 2)}), flush=True)


def measured_rows(path: str) -> dict:
    """The rows of an earlier record, each with its own date and commit (a record written before
    rows carried them gives its own), so that a run of a few methods keeps the others' as measured."""
    with open(path) as f:
        old = json.load(f)
    keep = ("date", "commit", "steps", "cores", "command")
    return {
        method: {**{k: old[k] for k in keep if k in old}, **row}
        for method, row in old.get("methods", {}).items()
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--steps", default="100,400", help="two step counts")
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.chdir(ROOT)  # the grid's config paths are the repository's
    steps = [int(s) for s in args.steps.split(",")]
    if args.child:
        return child(args.child, steps[0], args.workdir)
    if len(set(steps)) != 2:
        raise SystemExit("error: --steps takes two different step counts, e.g. 100,400")
    methods = args.methods.split(",")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        raise SystemExit(f"error: no such method {unknown}; known: {', '.join(METHODS)}")
    affinity, code = sorted(os.sched_getaffinity(0)), campaign_runner.commit()  # the code that runs
    rows = {}
    for method in methods:
        full = cell_config(method, steps[0])[1]
        row = {"cell_steps": full}
        for side, measure in (("official", official_cpu_s), ("ours", ours_cpu_s)):
            points = []
            for n in steps:
                with tempfile.TemporaryDirectory() as workdir:
                    t0 = time.time()
                    cpu = measure(method, n, workdir)
                print(
                    f"{method:9s} {side:8s} {n:5d} steps: {cpu:7.1f} CPU s "
                    f"({time.time() - t0:.0f} s wall)",
                    flush=True,
                )
                points.append((n, cpu))
            fixed, per_step = fit(points)
            row[side] = dict(
                points=points,
                fixed_s=round(fixed, 1),
                per_step_s=round(per_step, 4),
                cell_min=round((fixed + per_step * full) / 60, 1),
            )
        row["official_over_ours"] = round(row["official"]["cell_min"] / row["ours"]["cell_min"], 2)
        command = (
            f"taskset -c {','.join(map(str, affinity))} python experiments/official/bench_cpu.py"
            f" --steps={args.steps}"
        )
        if set(methods) != set(METHODS):
            command += f" --methods={args.methods}"
        rows[method] = {
            **row,
            "command": command,
            "date": time.strftime("%Y-%m-%d"),
            "commit": code,
            "steps": steps,
            "cores": affinity,
        }
    print(
        f"\n{'method':9s} {'official min':>12s} {'ours min':>9s} {'ratio':>6s}  (per step, fixed)"
    )
    for method, row in rows.items():
        o, u = row["official"], row["ours"]
        print(
            f"{method:9s} {o['cell_min']:12.1f} {u['cell_min']:9.1f} "
            f"{row['official_over_ours']:6.2f}  official {o['per_step_s']:.3f} s + {o['fixed_s']:.0f} s,"
            f" ours {u['per_step_s']:.3f} s + {u['fixed_s']:.0f} s"
        )
    record = dict(methods=rows)  # each row says how it was measured (`measured_rows`)
    if set(methods) != set(METHODS) and os.path.exists(args.out):
        record["methods"] = {**measured_rows(args.out), **rows}
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
