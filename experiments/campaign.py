"""The results campaign: grids of cells run a few at a time, each finished cell one JSON file, and
the results page made from the cells.

    python experiments/campaign.py --grid=gpu --minutes=12     # the next cells that fit in 12 min
    python experiments/campaign.py --grid=gpu --list           # every cell and its state
    python experiments/campaign.py --grid=cpu600 --redo=fashion_mnist.mocov2.s0
    python experiments/campaign.py --grid=cpu600 --only=fashion_mnist.jcl.s1   # these, in this order
    python experiments/campaign.py --page=docs/results.md      # the page, from every grid's cells

A grid (`experiments/grids.py`) is a fixed list of cells at one budget. The runner takes the cells
that have no result yet, in the grid's order, and runs each: pretraining in
`runs/campaign/<grid>/<cell>` (resumed from its checkpoint if an earlier run was stopped), then the
linear probe and the weighted kNN (the config's `evals.probe_table`: logistic regression on the
pooled last stage, the papers' protocol). Only then is the cell written, at once and whole
(written beside, then renamed): `docs/results/<grid>/<cell>.json` holds the commit, date, device,
wall time, the config's hash and overrides, probe and kNN top-1 and the loss and kNN curves. A
cell killed before that leaves no file and is run again next time; a cell with a file is never
run again unless `--redo` names it. With `--minutes`, a cell is not started when its estimate
(the longest earlier cell of the same method, else of the same kind, of this grid on this device
kind) does not fit in the minutes left; a cell with no estimate yet is started.

On an accelerator machine whose files come back only from one folder, `--results-dir=$OUT/cells`
and `--archive=$OUT/cells.tar` keep every finished cell (the tar is rewritten after each one), and
`--data-dir` points the configs at a carried copy of the data without changing the cells' identity.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from experiments import compare_methods, grids, paper_numbers  # noqa: E402
from ssl_jax.configs import base_config  # noqa: E402

RESULTS_DIR = os.path.join(ROOT, "docs", "results")
PROTOCOL_KEY = "evals.probe_table.features"  # what the grid sets on every cell (`Grid.features`)
WORK_ROOT = os.path.join(ROOT, "runs", "campaign")
HASH_FILE = "campaign_config_hash.txt"
# Config keys added after cells were recorded, at the value that does what those cells ran: left
# out of the hash at that value, so the earlier cells keep their hashes (and their checkpoints).
# A block whose keys are all left out goes too (`wandb`: the W&B writer, off by default).
HASH_NEUTRAL = {
    "data.color_fashion_mnist.views": "shared",
    "ema.target_init": "copy",
    **{f"wandb.{k}": v for k, v in base_config().wandb.items()},  # its defaults, read not copied
}


# ---- cells on disk ----------------------------------------------------------------------------


def cell_path(results_dir: str, cell: grids.Cell) -> str:
    return os.path.join(results_dir, cell.grid, f"{cell.name}.json")


def protocol_cells(found: dict[str, dict], grid: grids.Grid) -> tuple[dict, dict]:
    """(the cells of `found` recorded under the grid's protocol, {name: protocol} of the rest):
    what the page, the glance table and the studies' pages may show, and what they leave out."""
    expected = grid_protocol(grid)
    kept = {n: r for n, r in found.items() if r.get("probe_protocol") == expected}
    return kept, {n: r.get("probe_protocol") for n, r in found.items() if n not in kept}


def read_cells(results_dir: str, grid: grids.Grid) -> dict[str, dict]:
    """{cell name: record} of the grid's finished cells."""
    done = {}
    for cell in grids.cells(grid):
        path = cell_path(results_dir, cell)
        if os.path.exists(path):
            with open(path) as f:
                done[cell.name] = json.load(f)
    return done


def write_cell(results_dir: str, cell: grids.Cell, record: dict) -> str:
    """Writes the record whole or not at all: a temporary file in the same folder, then renamed."""
    path = cell_path(results_dir, cell)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".", suffix=".tmp")
    text = json.dumps(record, indent=1, ensure_ascii=False)
    # one line per curve point ([step, value]) instead of four
    text = re.sub(r"\[\s+(-?[\d.e+-]+),\s+(-?[\d.e+-]+)\s+\]", r"[\1, \2]", text)
    with open(fd, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    os.replace(tmp, path)
    return path


def write_archive(results_dir: str, grid: grids.Grid, archive: str) -> None:
    """`archive` = a tar of the grid's cells (`<grid>/<cell>.json`), rewritten whole."""
    folder = os.path.join(results_dir, grid.name)
    tmp = archive + ".tmp"
    with tarfile.open(tmp, "w") as tar:
        for name in sorted(os.listdir(folder)):
            if name.endswith(".json"):
                tar.add(os.path.join(folder, name), arcname=f"{grid.name}/{name}")
    os.replace(tmp, archive)


# ---- where and what -----------------------------------------------------------------------------


def commit() -> str:
    """The checkout's short commit, '+' when the code a cell runs (the package, the configs, the
    benchmarks, the experiments) has uncommitted changes; outside git (a tree copied to another machine)
    `$SSL_JAX_COMMIT` (`campaign_device.sh` sets it), else 'unknown'."""
    run = lambda *a: subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True)
    try:
        head = run("rev-parse", "--short", "HEAD")
    except FileNotFoundError:  # no git
        head = None
    if head is None or head.returncode:
        return os.environ.get("SSL_JAX_COMMIT", "unknown")
    code = ("ssl_jax", "configs", "benchmarks", "experiments")
    dirty = run("status", "--porcelain", "--untracked-files=no", "--", *code).stdout.strip()
    return head.stdout.strip() + ("+" if dirty else "")


def device_kind() -> str:
    """'NVIDIA H100 80GB HBM3 ×1', 'cpu (2 cores) ×1': what the estimates are kept apart by."""
    import jax

    devices = jax.local_devices()
    kind = devices[0].device_kind
    if devices[0].platform == "cpu":
        kind = f"cpu ({os.cpu_count()} cores)"
    return f"{kind} ×{len(devices)}"


def cell_config(grid: grids.Grid, cell: grids.Cell, data_dir: str = ""):
    """(config, hash, overrides) of a cell: the spec's config with the grid's budget, the section's
    and the spec's own overrides, the seed, and the kNN curve's schedule. The hash is of the whole
    resolved config before `data_dir` (where the data is read from is not what is measured)."""
    _, path, own = compare_methods.parse_entry(cell.spec)
    overrides = [*grid.sets, *grids.section(grid, cell.section).sets, *own]
    taken = [o for o in overrides if o.partition("=")[0] == PROTOCOL_KEY]
    if taken:
        raise SystemExit(
            f"grid {grid.name}, cell {cell.name}: {taken[0]!r}: the grid sets {PROTOCOL_KEY} "
            f"(Grid.features={grid.features!r}) for every cell; no override may"
        )
    overrides.append(f"{PROTOCOL_KEY}={grid.features}")  # last: one protocol per grid
    config = compare_methods.load_config(path, overrides, cell.seed or 0)
    if config.total_steps <= 0:
        raise SystemExit(f"grid {grid.name}: give total_steps in its sets (a curve needs it)")
    if cell.kind == "train" and grid.curve_points > 0 and not grid.official:
        config.evals.knn.every_steps = max(1, config.total_steps // grid.curve_points)
        config.evals.knn.num_train, config.evals.knn.num_test = grid.curve_knn
    digest = config_hash(config)
    if data_dir:
        config.data.data_dir = data_dir
        if config.data.name == "color_fashion_mnist":
            config.data.color_fashion_mnist.cache_dir = data_dir
    return config, digest, [path, *overrides]


def trained_cell(name: str, work_root: str = WORK_ROOT):
    """(config, workdir, cell) of a training cell of ours named `GRID.SECTION.METHOD.sSEED`: its
    config as it trained (`cell_config`) and its run folder (for the tools that read a finished
    cell's checkpoint)."""
    grid_name, _, cell_name = name.partition(".")
    grid = grids.GRIDS.get(grid_name)
    found = [c for c in grids.cells(grid) if c.name == cell_name] if grid else []
    if not found or found[0].kind != "train" or grid.official:
        raise SystemExit(f"error: {name} is not a training cell of ours")
    return cell_config(grid, found[0])[0], os.path.join(work_root, grid.name, cell_name), found[0]


def finished_state(config, workdir: str):
    """(experiment, state) of a finished run of `config` in `workdir`: its newest checkpoint,
    refused unless it holds the last step."""
    from ssl_jax import checkpoint, train

    exp = train.build_experiment(config)
    state = train.init_or_restore(exp, checkpoint.Checkpointer(workdir, create=False))
    if int(state.step) != config.total_steps:
        raise SystemExit(f"error: {workdir} holds step {int(state.step)}, not the last")
    return exp, state


def config_hash(config) -> str:
    """16 hex digits of the resolved config (JSON, sorted keys), `HASH_NEUTRAL`'s keys left out at
    their neutral value."""
    config = copy.deepcopy(config)
    for key, neutral in HASH_NEUTRAL.items():
        *parents, leaf = key.split(".")
        node = config
        for part in parents:
            node = node.get(part) if node is not None else None
        if node is not None and node.get(leaf, None) == neutral:
            with node.unlocked():
                del node[leaf]
            if not node and parents:  # the block is empty: as if it had never been added
                parent = config
                for part in parents[:-1]:
                    parent = parent.get(part)
                with parent.unlocked():
                    del parent[parents[-1]]
    return hashlib.sha256(config.to_json(sort_keys=True).encode()).hexdigest()[:16]


def grid_protocol(grid: grids.Grid) -> str:
    """The probe and kNN protocol every cell of `grid` records (its first cell's: the grid's
    budget and `features` set it on all)."""
    return compare_methods.protocol(cell_config(grid, grids.cells(grid)[0])[0])


def _variables(state) -> dict:
    return {"params": state.params, "batch_stats": state.batch_stats}


def _curve(records: list[dict], key: str) -> list[list[float]]:
    """[[step, value], ...] of one metric (a resumed run repeats steps: the later record wins)."""
    by_step = {int(r["step"]): float(r[key]) for r in records if key in r}
    return [[s, round(v, 5)] for s, v in sorted(by_step.items())]


def run_cell(
    grid: grids.Grid, cell: grids.Cell, work_root: str, data_dir: str = "", code: str = ""
) -> dict:
    """Runs one cell and returns its record (nothing is written to the results folder here);
    `code`: the commit of the code that runs it (read once, when the runner starts)."""
    from ssl_jax import checkpoint, train, writers

    t0, cpu0 = time.time(), cpu_seconds()
    config, digest, overrides = cell_config(grid, cell, data_dir)
    record = dict(
        grid=grid.name,
        cell=cell.name,
        section=cell.section,
        method=cell.method,
        kind=cell.kind,
        seed=cell.seed,
        config=overrides[0],
        overrides=overrides[1:],
        config_hash=digest,
        commit=code or commit(),
        date=time.strftime("%Y-%m-%d"),
        device=device_kind(),
        probe_protocol=compare_methods.protocol(config),
    )
    if grid.official:  # the official code trains it; our probe and kNN score its features
        from experiments.official import runner

        workdir = os.path.join(work_root, grid.name, cell.name)
        _fresh_workdir(workdir, digest)
        official = runner.run_cell(config, cell.method, workdir)
        scores = {"probe": official.pop("probe"), "knn": official.pop("knn")}
        record.update(official)
    elif cell.kind == "raw":
        scores = compare_methods.raw_pixels(config)
        record["knn_subset_top1"] = baseline_subset_knn(grid, config)
    else:
        exp = train.build_experiment(config)
        if cell.kind == "random":
            variables = _variables(train.init_or_restore(exp, None))
            record["knn_subset_top1"] = baseline_subset_knn(grid, config, exp, variables)
        else:
            workdir = os.path.join(work_root, grid.name, cell.name)
            _fresh_workdir(workdir, digest)
            resumed = checkpoint.newest_step(workdir)
            if resumed:  # its time and CPU seconds are then of the last part only
                record["resumed_from_step"] = resumed
            state = train.train_and_evaluate(config, workdir)
            record["pretrain_s"] = round(time.time() - t0, 1)
            record["pretrain_cpu_s"] = round(cpu_seconds() - cpu0, 1)
            record["steps"] = int(state.step)
            variables = _variables(state)
            metrics = writers.read_metrics(workdir)
            record["loss_curve"] = _curve(metrics, "train/loss")
            record["knn_curve"] = _curve(metrics, "eval/knn_top1")
            record["knn_curve_images"] = list(grid.curve_knn)
        scores = compare_methods.evaluate(config, variables, exp)
    record["probe_top1"] = round(float(scores["probe"]), 6)
    record["knn_top1"] = None if scores.get("knn") is None else round(float(scores["knn"]), 6)
    if grid.detection and cell.kind in ("train", "random"):  # then Detectron2 from its encoder
        from experiments import detection

        workdir = os.path.join(work_root, grid.name, cell.name)
        if cell.kind == "random":
            _fresh_workdir(workdir, digest)
            detection.save_initial_state(config, workdir)
        record.update(detection.finetune(grid, cell, workdir))
    record["wall_s"] = round(time.time() - t0, 1)
    record["cpu_s"] = round(cpu_seconds() - cpu0, 1)
    return record


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far, every thread (XLA's, tf.data's)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def baseline_subset_knn(grid: grids.Grid, config, exp=None, variables=None) -> float | None:
    """A baseline's kNN on the images the grid's kNN curves use (`grid.curve_knn`, the first
    train / test images), so that the curves' figure compares like with like; None when the curves
    use every image (the baseline's `knn_top1` is then the same thing)."""
    from ssl_jax.evaluate import evaluators, knn, run_features

    num_train, num_test = grid.curve_knn
    if num_train <= 0:
        return None
    data, k = config.data, config.evals.knn
    if exp is None:  # raw pixels
        read = lambda split, n: evaluators.raw_pixels(config, split, n, k.batch_size)
    else:
        stages = config.evals.probe_table.features == "stages"  # the cells' features
        read = lambda split, n: run_features.extract_features(
            exp, variables, split, n, batch_size=k.batch_size, stages=stages
        )
    train_xy, test_xy = read(data.eval_train_split, num_train), read(data.eval_test_split, num_test)
    result = knn.weighted_knn(*train_xy, *test_xy, k=k.k, temperature=k.temperature)
    return round(float(result["top1"]), 6)


def _fresh_workdir(workdir: str, digest: str) -> None:
    """Keeps an earlier attempt's checkpoints only when they were made by the same config."""
    marker = os.path.join(workdir, HASH_FILE)
    if os.path.isdir(workdir):
        same = os.path.exists(marker) and open(marker).read().strip() == digest
        if not same:
            shutil.rmtree(workdir)
    os.makedirs(workdir, exist_ok=True)
    with open(marker, "w") as f:
        f.write(digest + "\n")


# ---- the runner ---------------------------------------------------------------------------------


def estimate(cell: grids.Cell, done: dict[str, dict], device: str) -> float | None:
    """Seconds a cell should take on `device`: the longest finished cell of the same method and
    section there (a first seed, which compiles, is the longest), else the longest of the same
    kind there; None before any."""
    here = [r for r in done.values() if r["device"] == device and r["kind"] == cell.kind]
    same = [r["wall_s"] for r in here if (r["section"], r["method"]) == (cell.section, cell.method)]
    if same or here:
        return max(same or [r["wall_s"] for r in here])
    return None


def _lock(work_root: str, grid: grids.Grid):
    """An exclusive lock on `<work_root>/<grid>.lock`: two runners of one grid would train the
    same cells in the same folders. Raises SystemExit naming the other runner's pid."""
    import fcntl

    os.makedirs(work_root, exist_ok=True)
    handle = open(os.path.join(work_root, f"{grid.name}.lock"), "a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        raise SystemExit(
            f"grid {grid.name}: another runner holds {handle.name} (pid {handle.read().strip()}); "
            "wait for it or stop it"
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def run_grid(
    grid: grids.Grid,
    *,
    minutes: float | None = None,
    results_dir: str = RESULTS_DIR,
    work_root: str = WORK_ROOT,
    redo: tuple[str, ...] = (),
    only: tuple[str, ...] = (),
    data_dir: str = "",
    archive: str = "",
    run=run_cell,
) -> list[str]:
    """Runs the grid's missing cells in order (and `redo`'s) within `minutes`, or with `only`
    just those of the named cells that are missing (and `redo`'s), in the order named; returns the
    names of the cells it wrote."""
    all_cells = {c.name: c for c in grids.cells(grid)}
    lock = _lock(work_root, grid)  # noqa: F841  (held while this function runs)
    for flag, names in (("--redo", redo), ("--only", only)):
        unknown = [name for name in names if name not in all_cells]
        if unknown:
            raise SystemExit(f"{flag}: no cell {unknown} in grid {grid.name} (see --list)")
    for name in redo:
        path = cell_path(results_dir, all_cells[name])
        if os.path.exists(path):
            os.remove(path)
        shutil.rmtree(os.path.join(work_root, grid.name, name), ignore_errors=True)
    deadline = None if minutes is None else time.time() + 60 * minutes
    device, code, expected = device_kind(), commit(), grid_protocol(grid)
    done = read_cells(results_dir, grid)
    stale = [n for n, r in done.items() if r.get("probe_protocol") != expected]
    for name in stale:  # not a result of this grid: run again (the file is replaced when done)
        print(f"  {name}: recorded under {done.pop(name).get('probe_protocol')!r}, runs again")
    order = (
        [all_cells[name] for name in dict.fromkeys([*only, *redo])] if only else all_cells.values()
    )
    todo = [c for c in order if c.name not in done]
    print(
        f"grid {grid.name}: {len(done)} of {len(all_cells)} cells done, {len(todo)} to run on "
        f"{device}" + ("" if minutes is None else f" within {minutes:g} min"),
        flush=True,
    )
    written = []
    for index, cell in enumerate(todo):
        guess = estimate(cell, done, device)
        left = None if deadline is None else deadline - time.time()
        if left is not None and guess is not None and guess > left:
            print(f"  skip {cell.name}: estimate {guess / 60:.1f} min > {left / 60:.1f} min left")
            continue
        if left is not None and left <= 0:
            print(f"  skip {cell.name}: no time left")
            continue
        print(
            f"[{index + 1}/{len(todo)}] {cell.name} ({cell.kind}; estimate "
            + ("none yet" if guess is None else f"{guess / 60:.1f} min")
            + ("" if left is None else f", {left / 60:.1f} min left")
            + ")",
            flush=True,
        )
        record = run(grid, cell, work_root, data_dir, code)
        if record.get("probe_protocol") != expected:
            raise SystemExit(
                f"grid {grid.name}: cell {cell.name} was scored by "
                f"{record.get('probe_protocol')!r}, not the grid's {expected!r}; not written"
            )
        picture = record.pop("picture", None)  # a detection cell's predicted boxes
        path = write_cell(results_dir, cell, record)
        if picture:
            shutil.copyfile(picture, os.path.splitext(path)[0] + ".png")
        done[cell.name] = record
        written.append(cell.name)
        if archive:
            write_archive(results_dir, grid, archive)
        knn = record["knn_top1"]
        print(
            f"  wrote {os.path.relpath(path)}: probe {100 * record['probe_top1']:.2f}%"
            + ("" if knn is None else f", kNN {100 * knn:.2f}%")
            + ("" if "ap" not in record else f", AP {record['ap']:.2f}")
            + f", {record['wall_s']:.0f} s",
            flush=True,
        )
    missing = len(all_cells) - len(done)
    print(f"grid {grid.name}: {len(done)} of {len(all_cells)} cells done, {missing} missing")
    return written


def list_grid(grid: grids.Grid, results_dir: str = RESULTS_DIR, work_root: str = WORK_ROOT) -> str:
    """One line per cell: done (probe, kNN, time, device, date), partial (a checkpoint, no
    result) or missing."""
    done = read_cells(results_dir, grid)
    lines = [f"grid {grid.name} ({grid.title}): {len(done)} of {len(grids.cells(grid))} done"]
    for cell in grids.cells(grid):
        r = done.get(cell.name)
        if r:
            knn = "" if r["knn_top1"] is None else f" kNN {100 * r['knn_top1']:6.2f}"
            state = (
                f"done    probe {100 * r['probe_top1']:6.2f}{knn}  {r['wall_s']:7.1f} s  "
                f"{r['device']}  {r['date']} {r['commit']}"
            )
        else:
            ckpt = os.path.join(work_root, grid.name, cell.name, "checkpoints")
            steps = [int(s) for s in os.listdir(ckpt) if s.isdigit()] if os.path.isdir(ckpt) else []
            state = f"partial (checkpoint at step {max(steps)})" if steps else "missing"
        lines.append(f"  {cell.name:40s} {state}")
    return "\n".join(lines)


# ---- the page -----------------------------------------------------------------------------------


def mean_std(values) -> tuple[float, float]:
    return compare_methods.mean_std(values, 100)


def summary(values) -> str:
    """'mean ± std (every seed)' in %; one value alone as it is."""
    if len(values) == 1:
        return f"{100 * values[0]:.2f}"
    return compare_methods.summary(values)


def paper_cell(key: str) -> str:
    """The paper's closest figure for a method key: 'CIFAR-10 linear 83.9 (Ring Table 1(a))'."""
    found = paper_numbers.closest(grids.method_key(key))
    if found is None:
        return "no comparable figure"
    source = found["source"].split(":")[0]
    variant = f", {found['variant']}" if "variant" in found else ""
    return f"{found['dataset']} {found['protocol']} {found['top1']:.1f} ({source}{variant})"


def verdict(better: list[float], worse: list[float]) -> str:
    """'holds' when mean(better) − mean(worse) exceeds the sum of the two sample stds, 'does not
    hold' when it is below minus that sum, else 'within the seeds' spread'; not judged on fewer
    than two seeds a side (no spread to read the gap against)."""
    if min(len(better), len(worse)) < 2:
        return "not judged yet (fewer than 2 seeds)"
    (mb, sb), (mw, sw) = mean_std(better), mean_std(worse)
    gap = mb - mw
    if gap > sb + sw:
        return f"holds ({mb:.2f} vs {mw:.2f})"
    if gap < -(sb + sw):
        return f"does not hold ({mb:.2f} vs {mw:.2f})"
    return f"within the seeds' spread ({mb:.2f} ± {sb:.2f} vs {mw:.2f} ± {sw:.2f})"


def _rows(grid: grids.Grid, section: grids.Section, done: dict) -> dict[str, list[dict]]:
    """{method: its finished seed records, in seed order} of a section, baselines included."""
    rows: dict[str, list[dict]] = {}
    for cell in grids.cells(grid):
        if cell.section == section.key and cell.name in done:
            rows.setdefault(cell.method, []).append(done[cell.name])
    return rows


def section_table(grid: grids.Grid, section: grids.Section, done: dict) -> list[str]:
    rows = _rows(grid, section, done)
    lines = [
        "| encoder | linear probe top-1 (%) | kNN top-1 (%) | seeds | time per cell (s) | "
        "paper (closest setting) |",
        "|---|---|---|---|---|---|",
    ]
    for method, _ in section.methods:
        records = rows.get(method, [])
        if not records:
            lines.append(f"| {method} | – | – | 0 | – | {paper_cell(method)} |")
            continue
        lines.append(
            f"| {method} | {summary([r['probe_top1'] for r in records])} "
            f"| {summary([r['knn_top1'] for r in records])} | {len(records)} "
            f"| {np.mean([r['wall_s'] for r in records]):.0f} | {paper_cell(method)} |"
        )
    baselines = [("random_init", "random init")]
    baselines += [
        (f"random_init_{m}", f"random init ({m}'s model)") for m, _ in section.own_random_init
    ]
    for method, label in [*baselines, ("raw_pixels", "raw pixels")]:
        records = rows.get(method, [])
        cells = [
            summary([r[k] for r in records]) if records else "–" for k in ("probe_top1", "knn_top1")
        ]
        lines.append(f"| {label} | {cells[0]} | {cells[1]} | {len(records)} | – | – |")
    return lines


def evidence(grid: grids.Grid, section: grids.Section, done: dict) -> list[str]:
    """Does every method beat random init and raw pixels (mean over its seeds, probe and kNN), and
    each paper ordering of `grids.ORDERINGS` whose two methods are in the section."""
    rows = _rows(grid, section, done)
    lines = []
    for method, _ in section.methods:
        if not rows.get(method):
            continue
        parts = []
        random_init = section.random_init_row(method)
        owner = random_init.removeprefix("random_init").lstrip("_")
        random_name = "random init" + (f" ({owner}'s model)" if owner else "")
        for key, label in (("probe_top1", "probe"), ("knn_top1", "kNN")):
            mine = mean_std([r[key] for r in rows[method]])[0]
            for other, name in ((random_init, random_name), ("raw_pixels", "raw pixels")):
                if rows.get(other):
                    ref = mean_std([r[key] for r in rows[other]])[0]
                    parts.append(f"{label} {'>' if mine > ref else '≤'} {name}")
        if parts:  # none in a grid without baselines of its own
            lines.append(f"- {method}: " + ", ".join(parts))
    for better, worse, source in grids.ORDERINGS:
        if rows.get(better) and rows.get(worse):
            probe = verdict(*([r["probe_top1"] for r in rows[m]] for m in (better, worse)))
            knn = verdict(*([r["knn_top1"] for r in rows[m]] for m in (better, worse)))
            lines.append(f"- {better} > {worse} ({source}): probe {probe}; kNN {knn}")
    return lines


def knn_figure(grid: grids.Grid, section: grids.Section, done: dict, path: str) -> bool:
    """Every method's kNN curve (mean over its seeds) with the random-init and raw-pixel kNN as
    lines; False (and no file) when no cell has a curve."""
    rows = _rows(grid, section, done)
    curves = {
        m: [r["knn_curve"] for r in rows.get(m, []) if r.get("knn_curve")]
        for m, _ in section.methods
    }
    curves = {m: c for m, c in curves.items() if c}
    if not curves:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for method, runs in curves.items():
        length = min(len(c) for c in runs)
        steps = [c[0] for c in runs[0][:length]]
        mean = np.mean([[100 * v for _, v in c[:length]] for c in runs], axis=0)
        ax.plot(steps, mean, marker="o", label=f"{method} ({len(runs)} seeds)")
    train_n, test_n = grid.curve_knn
    key = "knn_subset_top1" if train_n > 0 else "knn_top1"  # the curves' images
    for method, style in (("random_init", ":"), ("raw_pixels", "--")):
        levels = [r[key] for r in rows.get(method, []) if r.get(key) is not None]
        if levels:
            level = mean_std(levels)[0]
            ax.axhline(level, color="grey", linestyle=style, label=method.replace("_", " "))
    images = "all images" if train_n < 0 else f"{train_n:,} train / {test_n:,} test images"
    ax.set(
        xlabel="step",
        ylabel="kNN top-1 (%)",
        title=f"{section.key}, grid {grid.name}: kNN during training ({images})",
    )
    ax.title.set_fontsize(9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def missing_text(missing: list[grids.Cell]) -> str:
    """'`mocov2` s1, s2; `raw_pixels`': the missing cells by method, in grid order."""
    by_method: dict[str, list[str]] = {}
    for cell in missing:
        by_method.setdefault(cell.method, []).append("" if cell.seed is None else f"s{cell.seed}")
    return "; ".join(f"`{m}` {', '.join(seeds)}".strip() for m, seeds in by_method.items())


def grid_page(grid: grids.Grid, found: dict, results_dir: str, page_dir: str) -> list[str]:
    """The grid's section of the page; only cells recorded under the grid's protocol go into
    its tables (the others are named as left out), and the protocol printed is the cells'."""
    all_cells = grids.cells(grid)
    done, left_out = protocol_cells(found, grid)
    devices = sorted({r["device"] for r in done.values()})
    dates = sorted({r["date"] for r in done.values()})
    commits = sorted({r["commit"] for r in done.values()})
    out = [f"## Grid `{grid.name}`: {grid.title}", "", grid.text.strip(), ""]
    out.append(
        f"Budget (every cell): `{' '.join(grid.sets)}`; {len(grid.seeds)} seeds"
        + (
            " ("
            + ", ".join(f"{len(grid.seeds) + len(s)} for `{m}`" for m, s in grid.more_seeds)
            + ")"
            if grid.more_seeds
            else ""
        )
        + "; sized for "
        f"{grid.device}. {len(done)} of {len(all_cells)} cells measured"
        + (
            f", on {', '.join(devices)}, {dates[0]} to {dates[-1]}, commits "
            f"{', '.join(f'`{c}`' for c in commits)}."
            if done
            else "."
        )
    )
    recorded = sorted({r["probe_protocol"] for r in done.values()})
    if recorded:
        out += [
            "",
            "Probe and kNN of every cell in this grid's tables, as the cells record it: "
            + "; ".join(f"`{p}`" for p in recorded)
            + f" ({FEATURE_WORDS.get(grid.features, grid.features)}).",
        ]
    if left_out:
        out += [
            "",
            f"Left out of the tables ({len(left_out)}), scored under another protocol than the "
            "grid's and to be run again: "
            + ", ".join(f"`{n}` ({p})" for n, p in sorted(left_out.items()))
            + ".",
        ]
    out += ["", "```bash", grid.command or f"python experiments/campaign.py --grid={grid.name}"]
    out += ["```", ""]
    for section in grid.sections:
        out += [f"### {grid.name} · {section.title}", ""]
        out += [section.text.strip(), ""] if section.text.strip() else []
        if section.sets:
            out += [f"This section's overrides: `{' '.join(section.sets)}`.", ""]
        cells = [c for c in all_cells if c.section == section.key]
        missing = [c for c in cells if c.name not in done]
        if len(missing) == len(cells):
            out += [f"No cell measured yet ({len(cells)} cells).", ""]
            continue
        out += section_table(grid, section, done)
        if missing:
            out += ["", f"Missing ({len(missing)}): {missing_text(missing)}."]
        figure = os.path.join(results_dir, grid.name, f"{section.key}_knn.png")
        if knn_figure(grid, section, done, figure):
            out += ["", f"![kNN curves]({os.path.relpath(figure, page_dir)})"]
        lines = evidence(grid, section, done)
        if lines:
            out += [
                "",
                "Against the baselines (means over the seeds) and the papers' orderings:",
                "",
            ]
            out += lines
        out.append("")
    return out


FEATURE_WORDS = {
    "pooled": "the backbone's pooled last stage, the papers' protocol",
    "stages": "every stage's pool concatenated, not the papers' protocol",
}

PAGE_HEADER = """# Results: every method on the embedded data sets

Made by `python experiments/campaign.py --page=docs/results.md` from the cells in
[`docs/results/`](results/) on {date}. Each cell is one run (a method, a seed, a budget) written
by `experiments/campaign.py` as it finished: commit, date, device, wall time, the config's hash and
overrides, the linear probe and kNN top-1, and the loss and kNN curves. Rows: mean ± sample std
over the seeds, then every seed's value. Each grid names its probe and kNN protocol, read from its
cells, and sets it on every cell (`Grid.features`); a cell recorded under another is kept out of
the tables. Here that is the papers' protocol: multinomial logistic regression (L-BFGS) on
standardised frozen features of the backbone's pooled last stage, l2 chosen on a held-out tenth
of train, trained on all training images and scored on the test split, and the weighted kNN
(k 200, τ 0.07, cosine) on the same features. Random init is the first method's encoder before
training, one per seed (a method with another model, CMC's two encoders, also has its own). An ordering *holds* when the gap of the means exceeds the sum of the two
sample stds, *does not hold* when it is below minus that sum, else it is *within the seeds'
spread*. The last column is the paper's figure for the method in the closest setting it reports:
none of the papers uses these data sets or budgets, so it says what the method reaches when
trained to convergence, not what a row should show.
"""


DISPLAY_NAMES = {
    "mocov2": "MoCo v2",
    "scce": "SCE",
    "ressl": "ReSSL",
    "jcl": "JCL",
    "ir": "IR",
    "interclr": "InterCLR",
    "iring": "IRing",
    "mocoring": "MoCoRing",
    "random_init": "random init",
    "raw_pixels": "raw pixels",
}


def glance_table(grid: grids.Grid, section_key: str, results_dir: str = RESULTS_DIR) -> list[str]:
    """The README's "Results at a glance": one section's rows (mean ± std over the seeds) in two
    side-by-side columns, the best method's probe and kNN in bold; only cells of the grid's
    protocol (as the page)."""
    done, _ = protocol_cells(read_cells(results_dir, grid), grid)
    section = grids.section(grid, section_key)
    rows = _rows(grid, section, done)
    keys = [m for m, _ in section.methods if rows.get(m)]
    best = {
        k: max(keys, key=lambda m: mean_std([r[k] for r in rows[m]])[0])
        for k in ("probe_top1", "knn_top1")
    }

    def cell(method: str, key: str) -> str:
        values = [r[key] for r in rows[method]]
        text = (
            f"{100 * values[0]:.2f}"
            if len(values) == 1
            else "{:.2f} ± {:.2f}".format(*mean_std(values))
        )
        return f"**{text}**" if best.get(key) == method else text

    entries = [
        f"{DISPLAY_NAMES.get(m, m)} | {cell(m, 'probe_top1')} | {cell(m, 'knn_top1')}"
        for m in [*keys, "random_init", "raw_pixels"]
        if rows.get(m)
    ]
    half = (len(entries) + 1) // 2
    left, right = entries[:half], entries[half:] + [" | | "] * (2 * half - len(entries))
    lines = ["| encoder | probe | kNN | | encoder | probe | kNN |", "|---|---|---|---|---|---|---|"]
    return lines + [f"| {a} | | {b} |" for a, b in zip(left, right, strict=True)]


def write_page(path: str, results_dir: str = RESULTS_DIR, names=grids.PAGE_GRIDS) -> None:
    page_dir = os.path.dirname(os.path.abspath(path))
    out = [PAGE_HEADER.format(date=time.strftime("%Y-%m-%d"))]
    for name in names:
        grid = grids.GRIDS[name]
        out += grid_page(grid, read_cells(results_dir, grid), results_dir, page_dir)
    with open(path, "w") as f:
        f.write("\n".join(out).rstrip() + "\n")
    print(f"wrote {path}", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=" ".join(__doc__.split("\n\n")[0].split())  # the first paragraph
    )
    parser.add_argument("--grid", choices=sorted(grids.GRIDS), help="run this grid's missing cells")
    parser.add_argument("--minutes", type=float, help="start no cell that cannot finish in time")
    parser.add_argument("--list", action="store_true", help="every cell of --grid and its state")
    parser.add_argument(
        "--redo",
        action="append",
        default=[],
        metavar="CELL",
        help="run this cell again (repeatable)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="CELL",
        help="run only these missing cells, in the order given (repeatable)",
    )
    parser.add_argument("--page", metavar="PATH", help="write the results page from the cells")
    parser.add_argument(
        "--glance",
        metavar="GRID.SECTION",
        help="print the README's results-at-a-glance table of one section (cpu600.fashion_mnist)",
    )
    parser.add_argument(
        "--results-dir", default=RESULTS_DIR, help="where the cells' JSON files are"
    )
    parser.add_argument("--work-root", default=WORK_ROOT, help="the runs' checkpoints")
    parser.add_argument("--data-dir", default="", help="read the data from here (not in the hash)")
    parser.add_argument("--archive", default="", help="tar of the grid's cells, after each cell")
    parser.add_argument("--compile-cache", default="", help="JAX's persistent compilation cache")
    args = parser.parse_args(argv)
    if args.compile_cache:
        import jax

        jax.config.update("jax_compilation_cache_dir", args.compile_cache)
    if args.grid and args.list:
        print(list_grid(grids.GRIDS[args.grid], args.results_dir, args.work_root))
    elif args.grid:
        from ssl_jax.run_control import StopRequested

        try:
            run_grid(
                grids.GRIDS[args.grid],
                minutes=args.minutes,
                results_dir=args.results_dir,
                work_root=args.work_root,
                redo=tuple(args.redo),
                only=tuple(args.only),
                data_dir=args.data_dir,
                archive=args.archive,
            )
        except (KeyboardInterrupt, StopRequested) as stop:
            # a stopped cell keeps its checkpoint (the next run resumes it), a finished one its
            # file; exit at once: the interpreter's teardown of TensorFlow can hang here
            print(f"stopped ({stop or 'Ctrl-C'}); the same command goes on from here", flush=True)
            sys.stdout.flush()
            os._exit(130)
    if args.page:
        write_page(args.page, args.results_dir)
    if args.glance:
        grid_name, _, section_key = args.glance.partition(".")
        print("\n".join(glance_table(grids.GRIDS[grid_name], section_key, args.results_dir)))
    if not (args.grid or args.page or args.glance):
        parser.error("give --grid (with --list to list it), --page and/or --glance")


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main()
