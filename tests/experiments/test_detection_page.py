"""The detection grid's cells and page: AP read from Detectron2's metrics.json at the iterations
trained, every seed and the orderings on the page, the pictures linked (synthetic cells)."""

import json
import os

import pytest

from experiments import campaign_cells, detection, detection_page, grids


def test_ap_is_read_at_the_iterations_trained(tmp_path):
    (tmp_path / "config.yaml").write_text("SOLVER:\n  MAX_ITER: 800\n")
    records = [
        {"iteration": 199, "bbox/AP": 4.0, "bbox/AP50": 9.0, "bbox/AP75": 2.0},
        {"iteration": 250, "total_loss": 1.0},  # a training record: not an evaluation
        {"iteration": 399, "bbox/AP": 20.0, "bbox/AP50": 40.0, "bbox/AP75": 15.0},
        {"iteration": 399, "bbox/AP": 21.0, "bbox/AP50": 41.0, "bbox/AP75": 16.0},  # resumed
        {"iteration": 800, "bbox/AP": 50.0, "bbox/AP50": 70.0, "bbox/AP75": 60.0},  # after train
    ]
    (tmp_path / "metrics.json").write_text("".join(json.dumps(r) + "\n" for r in records))
    evals = detection.read_detection_metrics(str(tmp_path))
    assert [(e["iterations"], e["bbox/AP"]) for e in evals] == [
        (200, 4.0),
        (400, 21.0),
        (800, 50.0),
    ]


def _cell(grid, method, seed, ap):
    return {
        "grid": grid.name, "cell": f"fashion_mnist_det.{method}.s{seed}", "section": "fashion_mnist_det",
        "method": method, "kind": "random" if method == "random_init" else "train", "seed": seed,
        "commit": "abc1234", "date": "2026-12-06", "device": "cpu (2 cores) ×1",
        "probe_protocol": "lbfgs on the pooled features, kNN k 200 τ 0.07",
        "probe_top1": 0.8, "knn_top1": 0.7, "ap": ap, "ap50": ap + 20, "ap75": ap + 5,
        "ap_curve": [[400, ap / 2, ap, ap / 3], [800, ap, ap + 20, ap + 5]],
        "finetune_cpu_s": 600.0, "wall_s": 900.0,
    }  # fmt: skip


@pytest.mark.slow
def test_the_page_states_every_seed_and_the_orderings(tmp_path):
    grid = grids.GRIDS["detection_cpu"]
    aps = {"random_init": (50, 51, 52), "scce": (60, 61, 62), "mocov2": (50.5, 52, 51)}
    results = tmp_path / "results"
    for method, values in aps.items():
        for seed, ap in enumerate(values):
            cell = next(
                c for c in grids.cells(grid) if c.name == f"fashion_mnist_det.{method}.s{seed}"
            )
            campaign_cells.write_cell(str(results), cell, _cell(grid, method, seed, ap))
            (results / grid.name / f"{cell.name}.png").write_bytes(b"png")
    page = results / "detection.md"  # the pages sit beside the cells, as in results/
    detection_page.page(grid, str(results), str(page))
    text = page.read_text()
    assert "| SCE | 3 | **61.00 ± 1.00** (60.00 / 61.00 / 62.00) |" in text
    assert "| supervised | 0 | — |" in text
    assert "- SCE over random init (AP): holds (61.00 vs 51.00)" in text
    assert "- MoCo v2 over random init (AP): within the seeds' spread" in text
    assert "supervised over SCE (AP): not judged yet" in text
    assert os.path.exists(results / "detection_cpu_ap.png")
    assert "](detection_cpu/fashion_mnist_det.scce.s0.png)" in text
    # the curve table: every evaluated iteration, and the verdict at each
    assert "| row | 400 it. | 800 it. |" in text
    assert "| SCE | **30.50 ± 0.50** (30.00 / 30.50 / 31.00) | **61.00 ± 1.00**" in text
    assert "- SCE over random init: 400 it. holds (30.50 vs 25.50); 800 it. holds" in text
    assert "- supervised over random init: not judged yet (fewer than 2 seeds)" not in text
