"""Sweep of the default job: one full run (`python -m ssl_jax.main`, pretraining, the probe table,
the pictures) per variant, a row per variant in `WORKDIR/sweep.md`.

    python experiments/default_job_sweep.py --workdir=runs/sweep \
        --variant 'default:' \
        --variant 'half_width: model.width=0.5 total_steps=3000' \
        --variant 'mocov2: config=configs/mocov2_fashion_mnist.py total_steps=1800' \
        [--config=configs/sce_fashion_mnist.py] [--set KEY=VALUE ...]

A variant is `'NAME: KEY=VALUE KEY=VALUE ...'`: each `KEY=VALUE` becomes `--config.KEY=VALUE` of
that run (no spaces inside a value: `data.crop_scale=(0.2,1.0)`), except `config=PATH[:ARG]`, which
replaces `--config` (default: the default job's config) for that variant; `--set` overrides go to
every variant, before the variant's own. Each variant runs in `WORKDIR/NAME` with its console
output in `WORKDIR/NAME/sweep.log` (every line with its second since the start). Timings come from
the output: pretraining = start → the probe table's first line (process start-up, data, compile,
training and the in-training kNN monitor), probe = that line → the table's last row (features,
probes and kNN of all three rows), total = the whole process (with the pictures). Accuracies are the
table's scalars in `metrics.jsonl` (`probe/top1`, `probe/random_init_top1`,
`probe/raw_pixels_top1`, `probe/knn_top1`).

Resumable: a finished variant (`WORKDIR/NAME/sweep_result.json`) is skipped; an unfinished one is
started again from scratch (its folder is emptied first: a resumed run's minutes would be wrong).
The table is rewritten after every variant, in the order of the `--variant` flags.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CONFIG = "configs/sce_fashion_mnist.py"
RESULT_FILE = "sweep_result.json"
LOG_FILE = "sweep.log"
TABLE_FILE = "sweep.md"
ACCURACIES = {  # table column: metrics.jsonl key
    "pretrained": "probe/top1",
    "random init": "probe/random_init_top1",
    "pixels": "probe/raw_pixels_top1",
    "kNN": "probe/knn_top1",
}


def parse_variant(text: str) -> tuple[str, list[str]]:
    """'NAME: KEY=VALUE ...' → (NAME, ['KEY=VALUE', ...])."""
    name, sep, rest = text.partition(":")
    name = name.strip()
    if not sep or not name or any(c in name for c in "/ \t"):
        raise SystemExit(
            f"--variant {text!r}: give 'NAME: KEY=VALUE ...' with a NAME without spaces or '/'"
        )
    overrides = rest.split()
    for item in overrides:
        if "=" not in item or item.startswith("="):
            raise SystemExit(f"--variant {text!r}: {item!r} is not KEY=VALUE")
    return name, overrides


def command(
    overrides: list[str],
    workdir: str,
    *,
    config: str = DEFAULT_CONFIG,
    python: str = sys.executable,
) -> list[str]:
    """The `ssl_jax.main` command line of one variant (`config=` picks the config file)."""
    flags = []
    for item in overrides:
        key, _, value = item.partition("=")
        if key == "config":
            config = value
        else:
            flags.append(f"--config.{key}={value}")
    return [python, "-m", "ssl_jax.main", f"--config={config}", f"--workdir={workdir}", *flags]


def run_variant(cmd: list[str], workdir: str) -> dict:
    """Runs `cmd`, streaming its output (timestamped) to the console and `WORKDIR/sweep.log`;
    returns the timings and the table's accuracies. Raises RuntimeError if the run fails."""
    os.makedirs(workdir, exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
    t0 = time.time()
    probe_start = probe_end = None
    with open(os.path.join(workdir, LOG_FILE), "w") as log:
        log.write(" ".join(cmd) + "\n")
        proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        for line in proc.stdout:
            now = time.time() - t0
            if probe_start is None and line.startswith("Linear probe"):
                probe_start = now
            if probe_start is not None and line.startswith("raw pixels") and "%" in line:
                probe_end = now
            log.write(f"[{now:7.1f}s] {line}")
            log.flush()
            print(line, end="", flush=True)
        returncode = proc.wait()
    total = time.time() - t0
    if returncode != 0:
        raise RuntimeError(f"exit status {returncode}; see {os.path.join(workdir, LOG_FILE)}")
    if probe_start is None or probe_end is None:
        raise RuntimeError(f"no probe table in the output; see {os.path.join(workdir, LOG_FILE)}")
    scalars = {}
    with open(os.path.join(workdir, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            scalars.update({k: v for k, v in record.items() if k in ACCURACIES.values()})
    return {
        "pretrain_min": probe_start / 60,
        "probe_min": (probe_end - probe_start) / 60,
        "total_min": total / 60,
        **{column: scalars.get(key) for column, key in ACCURACIES.items()},
    }


def table(rows: list[tuple[str, list[str], dict | None]], common: list[str]) -> str:
    """The Markdown table of the variants (unfinished ones as '–')."""
    columns = ["variant", "overrides", "pretrain (min)", "probe (min)", "total (min)"]
    columns += [f"{c} (%)" for c in ACCURACIES]
    lines = [
        f"Default-job sweep; overrides of every variant: {' '.join(common) or 'none'}",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for name, overrides, r in rows:
        cells = [name, " ".join(f"`{o}`" for o in overrides) or "–"]
        if r is None:
            cells += ["–"] * (len(columns) - 2)
        else:
            cells += [f"{r[k]:.1f}" for k in ("pretrain_min", "probe_min", "total_min")]
            cells += ["–" if r[c] is None else f"{100 * r[c]:.2f}" for c in ACCURACIES]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workdir", required=True)
    parser.add_argument(
        "--variant", action="append", default=[], help="'NAME: KEY=VALUE ...' (repeatable)"
    )
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="PATH[:ARG] of every variant")
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE for every variant")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    variants = [parse_variant(v) for v in args.variant]
    if not variants:
        raise SystemExit("give at least one --variant 'NAME: KEY=VALUE ...'")
    names = [name for name, _ in variants]
    if len(set(names)) != len(names):
        raise SystemExit(f"variant names must differ: {names}")
    _, common = parse_variant(f"all: {' '.join(args.set)}")
    workdir = os.path.abspath(args.workdir)
    os.makedirs(workdir, exist_ok=True)
    results: dict[str, dict] = {}
    for name, overrides in variants:
        run_dir = os.path.join(workdir, name)
        done = os.path.join(run_dir, RESULT_FILE)
        if os.path.exists(done):
            with open(done) as f:
                results[name] = json.load(f)
            print(f"== {name}: finished before, skipped", flush=True)
            continue
        if os.path.isdir(run_dir):
            print(f"== {name}: unfinished run in {run_dir}, starting it again", flush=True)
            shutil.rmtree(run_dir)
        cmd = command([*common, *overrides], run_dir, config=args.config, python=args.python)
        print(f"== {name}: {' '.join(cmd)}", flush=True)
        result = {"command": cmd, **run_variant(cmd, run_dir)}
        with open(done, "w") as f:
            json.dump(result, f, indent=1)
        results[name] = result
        with open(os.path.join(workdir, TABLE_FILE), "w") as f:
            f.write(table([(n, o, results.get(n)) for n, o in variants], common))
    text = table([(n, o, results.get(n)) for n, o in variants], common)
    with open(os.path.join(workdir, TABLE_FILE), "w") as f:
        f.write(text)
    print(text, flush=True)


if __name__ == "__main__":
    main()
