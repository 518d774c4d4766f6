"""The campaign's runner: a grid's missing cells in the grid's order (or the ones named), within the
minutes given, each run whole (our pretraining, the official code's or a baseline, then the probe
and kNN, and Detectron2 for a detection grid) and only then written as its JSON file; the
estimates that decide whether a cell fits, one runner per grid, and `--list`'s lines.
`campaign.py` is its command line."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

from experiments import compare_methods, grids
from experiments.campaign_cells import (
    RESULTS_DIR,
    ROOT,
    WORK_ROOT,
    cell_config,
    cell_path,
    grid_protocol,
    read_cells,
    write_archive,
    write_cell,
)

HASH_FILE = "campaign_config_hash.txt"


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


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far, every thread (XLA's, tf.data's)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def finished_state(config, workdir: str):
    """(experiment, state) of a finished run of `config` in `workdir`: its newest checkpoint,
    refused unless it holds the last step."""
    from ssl_jax import checkpoint, train

    exp = train.build_experiment(config)
    state = train.init_or_restore(exp, checkpoint.Checkpointer(workdir, create=False))
    if int(state.step) != config.total_steps:
        raise SystemExit(f"error: {workdir} holds step {int(state.step)}, not the last")
    return exp, state


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
    from ssl_jax import checkpoint, train
    from ssl_jax.output import writers

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
