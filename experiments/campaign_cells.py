"""A campaign cell's identity and its record on disk: the config a cell runs (the grid's budget,
its section's and its own overrides, the grid's probe protocol) with that config's hash, and the
files `results/<grid>/<cell>.json`, read and written whole. The runner
(`campaign_runner.py`) writes them; the pages (`campaign_page.py`, `detection_page.py`,
`speedrun_page.py`, `official/page.py`) read them."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import tarfile
import tempfile

from experiments import compare_methods, grids
from ssl_jax.configs import base_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(ROOT, "results")
PROTOCOL_KEY = "evals.probe_table.features"  # what the grid sets on every cell (`Grid.features`)
WORK_ROOT = os.path.join(ROOT, "runs", "campaign")
# Config keys added after cells were recorded, at the value that does what those cells ran: left
# out of the hash at that value, so the earlier cells keep their hashes (and their checkpoints).
# A block whose keys are all left out goes too (`wandb`: the W&B writer, off by default).
HASH_NEUTRAL = {
    "data.color_fashion_mnist.views": "shared",
    "ema.target_init": "copy",
    **{f"wandb.{k}": v for k, v in base_config().wandb.items()},  # its defaults, read not copied
}


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


def cell_path(results_dir: str, cell: grids.Cell) -> str:
    return os.path.join(results_dir, cell.grid, f"{cell.name}.json")


def read_cells(results_dir: str, grid: grids.Grid) -> dict[str, dict]:
    """{cell name: record} of the grid's finished cells."""
    done = {}
    for cell in grids.cells(grid):
        path = cell_path(results_dir, cell)
        if os.path.exists(path):
            with open(path) as f:
                done[cell.name] = json.load(f)
    return done


def protocol_cells(found: dict[str, dict], grid: grids.Grid) -> tuple[dict, dict]:
    """(the cells of `found` recorded under the grid's protocol, {name: protocol} of the rest):
    what the page, the glance table and the studies' pages may show, and what they leave out."""
    expected = grid_protocol(grid)
    kept = {n: r for n, r in found.items() if r.get("probe_protocol") == expected}
    return kept, {n: r.get("probe_protocol") for n, r in found.items() if n not in kept}


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
