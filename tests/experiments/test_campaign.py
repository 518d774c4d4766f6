"""The results campaign (`experiments/campaign.py`, `experiments/grids.py`): every grid's cells load
at their budget; the runner writes a cell only when it finished, skips a present cell, reruns a
killed one, keeps to its minutes; the page is made from the cells and lists the missing ones.
One real run of the `tiny` grid, killed mid-cell and run again, in a subprocess."""

import json
import os
import signal
import subprocess
import sys
import time

import ml_collections
import pytest

from ssl_jax import validation

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from experiments import (  # noqa: E402
    campaign_cells,
    campaign_page,
    campaign_runner,
    compare_methods,
    grids,
    paper_numbers,
)
from tests.data.test_no_tensorflow import BLOCK_TENSORFLOW, CHECK_NO_TENSORFLOW  # noqa: E402
from tests.process_env import xla_flags  # noqa: E402

DEVICE = "cpu (2 cores) ×1"


@pytest.mark.parametrize("name", sorted(grids.GRIDS))
def test_every_cell_of_every_grid_loads_at_its_budget(name):
    grid = grids.GRIDS[name]
    cells = grids.cells(grid)
    assert len({c.name for c in cells}) == len(cells)
    trained = [c for c in cells if c.kind == "train"]
    more = sum(len(seeds) for _, seeds in grid.more_seeds)
    assert len(trained) == len(grid.seeds) * sum(len(s.methods) for s in grid.sections) + more
    for method, seeds in grid.more_seeds:  # each names a method of the grid, past its seeds
        assert any(method in dict(s.methods) for s in grid.sections), method
        assert not set(seeds) & set(grid.seeds), method
    for cell in cells:
        config, digest, overrides = campaign_cells.cell_config(grid, cell, data_dir="/elsewhere")
        validation.validate(config, num_devices=1)
        assert config.seed == (cell.seed or 0) and config.data.data_dir == "/elsewhere"
        assert overrides[1 : 1 + len(grid.sets)] == list(grid.sets)
        if cell.kind == "train" and name != "tiny" and not grid.official and not grid.detection:
            assert grids.method_key(cell.method) in paper_numbers.PAPER_NUMBERS, cell.method
        if cell.kind == "train" and name != "tiny" and not grid.official and grid.curve_points:
            assert config.evals.knn.every_steps == config.total_steps // grid.curve_points
    # the hash names what is measured: the same with another data folder, another with a seed
    first = next(c for c in cells if c.kind == "train")
    assert (
        campaign_cells.cell_config(grid, first)[1]
        == campaign_cells.cell_config(grid, first, "/x")[1]
    )
    other = next((c for c in cells if c.kind == "train" and c.seed != first.seed), None)
    if other is not None:
        assert (
            campaign_cells.cell_config(grid, other)[1] != campaign_cells.cell_config(grid, first)[1]
        )


def test_a_key_added_at_its_neutral_value_keeps_the_hash():
    """`HASH_NEUTRAL`: a config without the key (as the earlier cells ran) and one with it at its
    neutral value have one hash; another value is another hash. The item-views section's cells of
    the as-generated methods differ from theirs by that key alone."""
    grid = grids.COLOR_SPEEDRUN
    cell = next(c for c in grids.cells(grid) if c.kind == "train")
    config, digest, _ = campaign_cells.cell_config(grid, cell)
    assert config.data.color_fashion_mnist.views == "shared"
    before = ml_collections.ConfigDict(config.to_dict())
    del before.data.color_fashion_mnist["views"]
    assert campaign_cells.config_hash(before) == digest
    config.data.color_fashion_mnist.views = "item"
    assert campaign_cells.config_hash(config) != digest
    # a block added later (the W&B writer's) at its defaults: the hash of the cells before it
    del before["wandb"]
    assert campaign_cells.config_hash(before) == digest
    config.data.color_fashion_mnist.views = "shared"
    config.wandb.project = "mine"
    assert campaign_cells.config_hash(config) != digest
    item = grids.section(grid, "color_fashion_mnist_item_views")
    same = grids.section(grid, "color_fashion_mnist").methods
    assert item.methods[: len(same)] == same  # then MoCo v2 at the official code's settings
    assert item.sets == ("data.color_fashion_mnist.views=item",)


def test_the_grids_budgets():
    c, _, _ = campaign_cells.cell_config(grids.CPU600, grids.cells(grids.CPU600)[3])
    assert (c.total_steps, c.global_batch_size, c.data.train_subset, c.model.width) == (
        600,
        64,
        10_000,
        0.5,
    )
    gpu = [campaign_cells.cell_config(grids.GPU, cell)[0] for cell in grids.cells(grids.GPU)]
    assert {(g.data.pipeline, g.model.dtype, g.model.width, g.global_batch_size) for g in gpu} == {
        ("device", "bfloat16", 1.0, 512)
    }
    colour = grids.section(grids.GPU, "color_fashion_mnist")
    assert {m for m, _ in colour.methods} >= {"mocov2", "scce", "ressl", "jcl", "interclr"}
    assert {m for m, _ in colour.methods} >= {
        "ir",
        "iring",
        "mocoring",
        "cmc",
        "infomin",
        "cmcring",
    }
    long = campaign_cells.cell_config(grids.CPU_LONG, grids.cells(grids.CPU_LONG)[-1])[0]
    assert (long.total_steps, long.data.train_subset) == (3000, 10_000)
    for better, worse, _ in grids.ORDERINGS:
        assert better in paper_numbers.PAPER_NUMBERS and worse in paper_numbers.PAPER_NUMBERS


SMALL = grids.Grid(
    name="small",
    title="fake",
    text="fake runs",
    device="any",
    sets=("total_steps=4",),
    seeds=(0, 1),
    sections=(
        grids.Section(
            key="fashion_mnist",
            title="Fashion-MNIST",
            text="",
            methods=(
                ("mocov2", "configs/mocov2_fashion_mnist.py:runlocal"),
                ("scce", "configs/sce_fashion_mnist.py:runlocal"),
            ),
        ),
    ),
)


class Clock:
    """`campaign_runner.time` with a clock that the fake runs move on."""

    now = 1e9
    strftime = staticmethod(time.strftime)

    @classmethod
    def time(cls):
        return cls.now


def fake_run(log, fail=(), seconds=None, scores=None, protocols=None):
    """A `run_cell` stand-in: records the call; raises for a cell named in `fail` (a run killed
    before it finished); a record with `seconds[kind]` of wall time (the clock moves on by as much),
    `scores[method]` (probe, kNN) and the grid's protocol (`protocols[cell name]` if named)."""

    def run(grid, cell, work_root, data_dir="", code=""):
        log.append(cell.name)
        Clock.now += (seconds or {}).get(cell.kind, 1.0)
        if cell.name in fail:
            raise KeyboardInterrupt(f"killed during {cell.name}")
        probe, knn = (scores or {}).get(cell.method, (0.5, 0.4))
        probe += 0.01 * (cell.seed or 0)
        return dict(
            grid=grid.name,
            cell=cell.name,
            section=cell.section,
            method=cell.method,
            kind=cell.kind,
            seed=cell.seed,
            device=DEVICE,
            date="2026-11-27",
            commit="abc1234",
            wall_s=(seconds or {}).get(cell.kind, 1.0),
            probe_top1=probe,
            knn_top1=knn,
            knn_curve=[[2, knn - 0.1], [4, knn]] if cell.kind == "train" else None,
            probe_protocol=(protocols or {}).get(cell.name, campaign_cells.grid_protocol(grid)),
        )

    return run


@pytest.fixture
def device(monkeypatch):
    monkeypatch.setattr(campaign_runner, "device_kind", lambda: DEVICE)
    monkeypatch.setattr(campaign_runner, "time", Clock)


def test_a_killed_cell_leaves_no_file_and_is_run_next_time(tmp_path, device):
    results, log = str(tmp_path / "cells"), []
    with pytest.raises(KeyboardInterrupt):
        campaign_runner.run_grid(
            SMALL, results_dir=results, run=fake_run(log, fail={"fashion_mnist.scce.s0"})
        )
    names = [c.name for c in grids.cells(SMALL)]
    assert log == names[:4]  # raw, random.s0, mocov2.s0, then scce.s0 was killed
    assert names[4] == "fashion_mnist.random_init.s1"  # every row at seed 0 first
    assert sorted(os.listdir(os.path.join(results, "small"))) == sorted(
        f"{n}.json" for n in log[:3]
    )
    log.clear()
    written = campaign_runner.run_grid(SMALL, results_dir=results, run=fake_run(log))
    assert log == written == names[3:]  # only what had no file
    log.clear()
    assert (
        campaign_runner.run_grid(SMALL, results_dir=results, run=fake_run(log)) == [] and log == []
    )
    # --redo runs a present cell again (and only it)
    campaign_runner.run_grid(
        SMALL, results_dir=results, redo=("fashion_mnist.mocov2.s1",), run=fake_run(log)
    )
    assert log == ["fashion_mnist.mocov2.s1"]
    with pytest.raises(SystemExit, match="no cell"):
        campaign_runner.run_grid(SMALL, results_dir=results, redo=("nope",), run=fake_run(log))


def test_only_runs_the_named_missing_cells_in_the_order_given(tmp_path, device):
    results, log = str(tmp_path / "cells"), []
    names = [c.name for c in grids.cells(SMALL)]
    first, later = names[1], names[-1]
    written = campaign_runner.run_grid(
        SMALL, results_dir=results, only=(later, first), run=fake_run(log)
    )
    assert log == written == [later, first]
    log.clear()
    campaign_runner.run_grid(SMALL, results_dir=results, only=(later, names[0]), run=fake_run(log))
    assert log == [names[0]]  # a done cell is not run again
    with pytest.raises(SystemExit, match="--only: no cell"):
        campaign_runner.run_grid(SMALL, results_dir=results, only=("nope",), run=fake_run(log))


def test_one_runner_per_grid(tmp_path, device):
    held = campaign_runner._lock(str(tmp_path), SMALL)
    with pytest.raises(SystemExit, match=f"another runner .* \\(pid {os.getpid()}\\)"):
        campaign_runner.run_grid(
            SMALL, work_root=str(tmp_path), results_dir=str(tmp_path), run=None
        )
    held.close()
    assert (
        campaign_runner.run_grid(
            SMALL, minutes=0, work_root=str(tmp_path), results_dir=str(tmp_path), run=None
        )
        == []
    )


def test_a_cell_whose_estimate_does_not_fit_is_not_started(tmp_path, device):
    results, log = str(tmp_path / "cells"), []
    slow = dict(train=600.0, random=1.0, raw=1.0)
    # the first pass: no estimates yet, the first cell of each kind runs; then the train cells'
    # estimate (10 min) exceeds the 2 minutes (scce.s0 skipped), and none is left for the rest
    campaign_runner.run_grid(SMALL, minutes=2, results_dir=results, run=fake_run(log, seconds=slow))
    assert log == [
        "fashion_mnist.raw_pixels",
        "fashion_mnist.random_init.s0",
        "fashion_mnist.mocov2.s0",
    ]
    done = campaign_cells.read_cells(results, SMALL)
    cell = {c.name: c for c in grids.cells(SMALL)}
    assert (
        campaign_runner.estimate(cell["fashion_mnist.scce.s1"], done, DEVICE) == 600.0
    )  # same kind
    assert campaign_runner.estimate(cell["fashion_mnist.scce.s1"], done, "another ×1") is None
    log.clear()
    campaign_runner.run_grid(
        SMALL, minutes=11, results_dir=results, run=fake_run(log, seconds=slow)
    )
    # one 10-minute cell fits in 11 minutes, not two; the 1-second baseline after it still does
    assert log == ["fashion_mnist.scce.s0", "fashion_mnist.random_init.s1"]


def test_the_page_shows_what_is_there_and_lists_what_is_missing(tmp_path, device, monkeypatch):
    results, log = str(tmp_path / "cells"), []
    scores = {"mocov2": (0.80, 0.70), "scce": (0.90, 0.60), "random_init": (0.70, 0.75)}
    scores["raw_pixels"] = (0.85, 0.65)
    run = fake_run(log, fail={"fashion_mnist.scce.s1"}, scores=scores)
    with pytest.raises(KeyboardInterrupt):
        campaign_runner.run_grid(SMALL, results_dir=results, run=run)
    monkeypatch.setitem(grids.GRIDS, "small", SMALL)
    page = tmp_path / "cells" / "README.md"  # beside the cells, as results/README.md
    campaign_page.write_page(str(page), results, names=("small",))
    text = page.read_text()
    # mocov2 at seeds 0 / 1: probe 80 / 81 (mean 80.50, std 0.71); scce only seed 0
    assert "| mocov2 | 80.50 ± 0.71 (80.00 / 81.00) | 70.00 ± 0.00 (70.00 / 70.00) | 2 |" in text
    assert "| scce | 90.00 | 60.00 | 1 |" in text
    assert "| raw pixels | 85.00 | 65.00 | 1 |" in text
    assert "Missing (1): `scce` s1." in text
    assert "- mocov2: probe > random init, probe ≤ raw pixels, kNN ≤ random init" in text
    figure = tmp_path / "cells" / "small" / "fashion_mnist_knn.png"
    assert figure.stat().st_size > 0 and "](small/fashion_mnist_knn.png)" in text
    # a grid with no cells yet is on the page too, saying so
    empty = str(tmp_path / "empty")
    campaign_page.write_page(str(page), empty, names=("small",))
    assert "0 of 7 cells measured." in page.read_text()
    assert "No cell measured yet (7 cells)." in page.read_text()


def test_verdict_reads_the_gap_against_the_spread():
    assert campaign_page.verdict([0.90, 0.91, 0.92], [0.80, 0.81, 0.82]).startswith("holds")
    assert campaign_page.verdict([0.80, 0.81, 0.82], [0.90, 0.91, 0.92]).startswith("does not hold")
    assert campaign_page.verdict([0.80, 0.85, 0.90], [0.82, 0.83, 0.84]).startswith("within")
    assert campaign_page.verdict([0.9], [0.8, 0.81]).startswith("not judged")
    assert campaign_page.summary([0.5]) == "50.00"


@pytest.mark.slow
def test_the_tiny_grid_for_real_killed_mid_cell_then_finished(tmp_path):
    """`campaign.py --grid=tiny` (the device pipeline) in a subprocess where TensorFlow cannot be
    imported, as on the accelerator machines, killed (SIGKILL) while its training cell runs: the
    baselines' files are there, the killed cell has none; run again, only that cell runs and its
    record has the curves; `--list` reads them."""
    results, work = str(tmp_path / "cells"), str(tmp_path / "work")
    env = dict(os.environ, XLA_FLAGS=xla_flags())  # one CPU device, as a user's run
    script = os.path.join(ROOT, "experiments", "campaign.py")
    args = ["--grid=tiny", f"--results-dir={results}", f"--work-root={work}"]
    run_script = f"import runpy; sys.argv = {[script, *args]!r}\n"
    run_script += f"runpy.run_path({script!r}, run_name='__main__')\n"
    cmd = [sys.executable, "-u", "-c", BLOCK_TENSORFLOW + run_script + CHECK_NO_TENSORFLOW]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if "fashion_mnist.mocov2.s0 (train" in line:
            time.sleep(3)
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    cells = os.path.join(results, "tiny")
    assert sorted(f for f in os.listdir(cells) if f.endswith(".json")) == [
        "fashion_mnist.random_init.s0.json",
        "fashion_mnist.raw_pixels.json",
    ]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    assert "2 of 3 cells done, 1 to run" in out and out.count("wrote ") == 1
    record = json.load(open(os.path.join(cells, "fashion_mnist.mocov2.s0.json")))
    assert record["steps"] == 2 and [s for s, _ in record["knn_curve"]] == [1, 2]
    assert 0 < record["probe_top1"] <= 1 and record["config_hash"] and record["wall_s"] > 0
    for baseline in ("random_init.s0", "raw_pixels"):  # kNN on the curves' 128 / 64 images too
        base = json.load(open(os.path.join(cells, f"fashion_mnist.{baseline}.json")))
        assert 0 < base["knn_subset_top1"] <= 1 and base["knn_subset_top1"] != base["knn_top1"]
    assert "no tensorflow: ok" in out
    listing = subprocess.run(
        [sys.executable, script, *args, "--list"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    assert listing.count("done    probe") == 3


def test_a_method_with_another_model_is_read_against_its_own_random_init(tmp_path, device):
    import dataclasses

    section = dataclasses.replace(SMALL.sections[0], own_random_init=(("scce", ("scce",)),))
    grid = dataclasses.replace(SMALL, sections=(section,))
    names = [c.name for c in grids.cells(grid)]
    assert [names[2], names[6]] == [
        "fashion_mnist.random_init_scce.s0",
        "fashion_mnist.random_init_scce.s1",
    ]
    scores = {"mocov2": (0.80, 0.70), "scce": (0.75, 0.60), "random_init": (0.70, 0.65)}
    scores |= {"random_init_scce": (0.78, 0.55), "raw_pixels": (0.85, 0.65)}
    campaign_runner.run_grid(grid, results_dir=str(tmp_path), run=fake_run([], scores=scores))
    config = campaign_cells.cell_config(grid, grids.cells(grid)[2])[0]
    assert config.method == "sce"  # SCE's own model at random init
    lines = campaign_page.evidence(grid, section, campaign_cells.read_cells(str(tmp_path), grid))
    assert "- mocov2: probe > random init, probe ≤ raw pixels, kNN > random init" in "\n".join(
        lines
    )
    # scce's probe (75.5) is above the first random init (70.5) but not its own model's (78.5)
    assert "- scce: probe ≤ random init (scce's model), probe ≤ raw pixels" in "\n".join(lines)
    table = "\n".join(
        campaign_page.section_table(grid, section, campaign_cells.read_cells(str(tmp_path), grid))
    )
    assert "| random init (scce's model) | 78.50 ± 0.71 (78.00 / 79.00) |" in table


STAGES = "lbfgs on the stages features, kNN k 200 τ 0.07"


def test_every_grid_forces_one_protocol_on_every_cell():
    """SCE's config probes its four stages (the default job's table); in a grid it is pooled, as
    every other row, and no cell's own override may set the key."""
    import dataclasses

    for grid in grids.GRIDS.values():
        configs = [campaign_cells.cell_config(grid, c)[0] for c in grids.cells(grid)]
        assert {c.evals.probe_table.features for c in configs} == {grid.features} == {"pooled"}
        expected = campaign_cells.grid_protocol(grid)
        assert {compare_methods.protocol(c) for c in configs} == {expected}
    assert campaign_cells.grid_protocol(grids.CPU_LONG) == (
        "lbfgs on the pooled features, kNN k 200 τ 0.07"
    )
    spec = "configs/sce_fashion_mnist.py:runlocal evals.probe_table.features=stages"
    section = dataclasses.replace(SMALL.sections[0], methods=(("scce", spec),))
    bad = dataclasses.replace(SMALL, sections=(section,))
    with pytest.raises(SystemExit, match="the grid sets evals.probe_table.features"):
        campaign_cells.cell_config(bad, grids.cells(bad)[-1])


def test_a_cell_scored_under_another_protocol_is_not_written_nor_shown(tmp_path, device):
    results, log = str(tmp_path / "cells"), []
    wrong = {"fashion_mnist.scce.s0": STAGES}
    with pytest.raises(SystemExit, match="scored by .*stages.*not written"):
        campaign_runner.run_grid(SMALL, results_dir=results, run=fake_run(log, protocols=wrong))
    assert not os.path.exists(os.path.join(results, "small", "fashion_mnist.scce.s0.json"))
    campaign_runner.run_grid(SMALL, results_dir=results, run=fake_run(log))
    # a cell written earlier under another protocol is kept out of the page's table ...
    path = os.path.join(results, "small", "fashion_mnist.scce.s1.json")
    record = json.load(open(path))
    json.dump(dict(record, probe_protocol=STAGES, probe_top1=0.99), open(path, "w"))
    text = "\n".join(
        campaign_page.grid_page(SMALL, campaign_cells.read_cells(results, SMALL), results, ".")
    )
    assert "`fashion_mnist.scce.s1` (lbfgs on the stages features" in text
    assert "| scce | 50.00 | 40.00 | 1 |" in text  # seed 0 alone; the 99 % is not in it
    pooled = campaign_cells.grid_protocol(SMALL)
    assert f"as the cells record it: `{pooled}` (the backbone's pooled last stage" in text
    # ... and the runner runs it again
    log.clear()
    assert campaign_runner.run_grid(SMALL, results_dir=results, run=fake_run(log)) == [
        "fashion_mnist.scce.s1"
    ]


@pytest.mark.parametrize("name", grids.PAGE_GRIDS)
def test_every_table_of_the_results_page_has_one_protocol_the_one_it_names(name):
    """The committed cells (`results/<grid>/`): within each table of the page, every row (methods and
    baselines) was scored by the grid's protocol, and `results/README.md` prints that protocol."""
    grid = grids.GRIDS[name]
    found = campaign_cells.read_cells(campaign_cells.RESULTS_DIR, grid)
    expected = campaign_cells.grid_protocol(grid)
    for section in grid.sections:
        protocols = {
            r["cell"]: r["probe_protocol"] for r in found.values() if r["section"] == section.key
        }
        other = {cell: p for cell, p in protocols.items() if p != expected}
        assert not other, f"{name}/{section.key}: cells not scored by {expected!r}: {other}"
    page = open(os.path.join(ROOT, "results", "README.md"), encoding="utf-8").read()
    grid_text = page.partition(f"## Grid `{name}`")[2].partition("\n## Grid ")[0]
    if found:
        assert f"as the cells record it: `{expected}`" in grid_text
    assert "Left out of the tables" not in grid_text


def test_help_says_a_whole_sentence_and_every_option():
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "experiments", "campaign.py"), "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    description = result.stdout.split("\n\n")[1]
    assert description.startswith("The results campaign") and description.rstrip().endswith(".")
    options = result.stdout.split("options:")[1]
    for flag in ("--grid", "--redo", "--results-dir", "--page", "--minutes"):
        entry = options.split(flag, 1)[1].split("\n  --")[0]
        assert len(entry.split()) > 2, (flag, entry)  # more than the metavar: a help text


def test_the_readme_glance_table_is_the_one_the_cells_give():
    """The README's "Results at a glance" is `--glance=cpu_speedrun_methods.fashion_mnist` of the
    committed cells (only cells of the grid's protocol), not a table typed by hand."""
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    table = "\n".join(campaign_page.glance_table(grids.CPU_SPEEDRUN_METHODS, "fashion_mnist"))
    assert table in readme


def test_more_seeds_add_cells_after_the_grid_and_their_rows_read_every_seed(tmp_path, device):
    import dataclasses

    grid = dataclasses.replace(SMALL, more_seeds=(("scce", (2, 3)),))
    names = [c.name for c in grids.cells(grid)]
    assert names[: len(grids.cells(SMALL))] == [c.name for c in grids.cells(SMALL)]
    assert names[len(grids.cells(SMALL)) :] == ["fashion_mnist.scce.s2", "fashion_mnist.scce.s3"]
    scores = {"mocov2": (0.80, 0.70), "scce": (0.75, 0.60), "random_init": (0.70, 0.65)}
    scores |= {"raw_pixels": (0.85, 0.65)}
    campaign_runner.run_grid(grid, results_dir=str(tmp_path), run=fake_run([], scores=scores))
    found = campaign_cells.read_cells(str(tmp_path), grid)
    table = "\n".join(campaign_page.section_table(grid, grid.sections[0], found))
    assert "| scce | 76.50 ± 1.29 (75.00 / 76.00 / 77.00 / 78.00) |" in table  # fake: + seed/100
    page = "\n".join(campaign_page.grid_page(grid, found, str(tmp_path), str(tmp_path)))
    assert "2 seeds (4 for `scce`); sized for any." in page
