"""Detection cells of the campaign (grids with `Grid.detection`) and their page.

A cell of such a grid is pretrained (or initialised) and probed as any other
(`campaign_runner.run_cell`), then `finetune` exports its encoder (`python -m ssl_jax.export --format=detectron2`) and runs
`python -m ssl_jax.detection` on the grid's Detectron2 config in a child process
(`<workdir>/detectron2`, `--resume`: a stopped fine-tune goes on from its last checkpoint), and
records AP, AP50, AP75 (`COCOEvaluator`, in %), the AP curve over iterations, the fine-tune's wall
and CPU seconds, and a picture of predicted boxes (the runner copies it to `results/<grid>/<cell>.png`).

    python experiments/campaign.py --grid=detection_cpu           # the cells (resumable)
    python experiments/detection_page.py                          # results/detection.md
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

from experiments import grids

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

METRICS = ("AP", "AP50", "AP75")
PICTURE_IMAGES = 4


def _child_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def save_initial_state(config, workdir: str) -> None:
    """A random-init cell's encoder as a checkpoint (step 0) in `workdir`, for the export."""
    from ssl_jax import checkpoint, train

    if checkpoint.newest_step(workdir) is not None:
        return
    state = train.init_or_restore(train.build_experiment(config), None)
    ckpt = checkpoint.Checkpointer(workdir)
    ckpt.save(state, force=True)
    ckpt.wait()
    checkpoint.write_config(workdir, config)


def read_detection_metrics(output_dir: str) -> list[dict]:
    """Detectron2's `metrics.json` records that hold bbox AP (the evaluations), each with
    `iterations`, the iterations trained before it (a periodic evaluation is logged at its last
    iteration's index, the final one after training at `SOLVER.MAX_ITER`); a resumed run repeats
    iterations: the later record wins."""
    import yaml

    with open(os.path.join(output_dir, "config.yaml")) as f:
        max_iter = int(yaml.safe_load(f)["SOLVER"]["MAX_ITER"])
    by_iter = {}
    with open(os.path.join(output_dir, "metrics.json")) as f:
        for line in f:
            record = json.loads(line)
            if "bbox/AP" in record:
                done = min(int(record["iteration"]) + 1, max_iter)
                by_iter[done] = {**record, "iterations": done}
    return [by_iter[i] for i in sorted(by_iter)]


def finetune(grid: grids.Grid, cell: grids.Cell, workdir: str) -> dict:
    """Export `workdir`'s encoder, fine-tune `grid.detection` from it and return the record's
    detection fields (see the module docstring)."""
    from ssl_jax import export

    pkl = os.path.join(workdir, "encoder.pkl")
    export.export(workdir, "detectron2", pkl)
    with open(export.facts_path(pkl)) as f:
        options = json.load(f)["detectron2_options"].split()
    config_file, *overrides = grid.detection
    output_dir = os.path.join(workdir, "detectron2")
    command = [
        sys.executable, "-m", "ssl_jax.detection",
        "--config-file", os.path.join(ROOT, config_file),
        "--num-gpus", "1", "--resume", "--draw", str(PICTURE_IMAGES),
        *options, *overrides,
        "OUTPUT_DIR", output_dir, "SEED", str(cell.seed or 0),
    ]  # fmt: skip
    t0, cpu0 = time.time(), _child_cpu_seconds()
    log = os.path.join(workdir, "detectron2.log")
    print(f"  fine-tune: {' '.join(command[1:])} (log {log})", flush=True)
    with open(log, "a") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{cell.name}: the fine-tune failed (exit {done.returncode}); see {log}")
    evals = read_detection_metrics(output_dir)
    if not evals:
        raise SystemExit(f"{cell.name}: the fine-tune wrote no bbox AP; see {log}")
    last = evals[-1]
    return {
        "picture": os.path.join(output_dir, "predictions.png"),  # copied beside the cell's file
        "detection_config": config_file,
        "detection_overrides": overrides,
        # the weights' path as the repository sees it (no machine path in a cell)
        "detectron2_options": [os.path.relpath(o, ROOT) if o == pkl else o for o in options],
        "detection_iterations": last["iterations"],
        **{m.lower(): round(float(last[f"bbox/{m}"]), 4) for m in METRICS},
        "ap_curve": [
            [r["iterations"], *(round(float(r[f"bbox/{m}"]), 4) for m in METRICS)] for r in evals
        ],
        "finetune_s": round(time.time() - t0, 1),
        "finetune_cpu_s": round(_child_cpu_seconds() - cpu0, 1),
    }
