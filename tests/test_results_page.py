"""The results page's machinery (`benchmarks/compare_methods.py --results-page`): every group's
configs load with their overrides, every method has its paper's figure, and the page is written
from the runs' results (the runs themselves are faked: pretraining is the benchmark's job)."""

import os
import sys

import pytest

from ssl_jax import configs

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
sys.path.insert(0, BENCH)

import compare_methods  # noqa: E402
import paper_numbers  # noqa: E402
import results_spec  # noqa: E402


@pytest.mark.parametrize("group", results_spec.GROUPS, ids=lambda g: g["workdir"])
def test_every_entry_loads_with_the_budget(group):
    names = set()
    for entry, key in group["configs"]:
        name, path, overrides = compare_methods.parse_entry(entry)
        config = configs.load(path)
        for assignment in [*group["sets"], *overrides]:
            configs.apply_override(config, assignment)
        assert config.total_steps == 600 and config.global_batch_size == 64
        assert config.evals.probe_table.solver == "lbfgs"
        assert config.data.train_subset == 10_000
        assert key in paper_numbers.PAPER_NUMBERS, key
        names.add(name)
    assert len(names) == len(group["configs"])  # one run directory per entry


def test_paper_numbers_are_complete_and_the_closest_is_the_method_itself():
    for key, entries in paper_numbers.PAPER_NUMBERS.items():
        for e in entries:
            assert {"dataset", "protocol", "top1", "setting", "source"} <= set(e), (key, e)
            assert 0 < e["top1"] < 100, (key, e)
    # the Ring paper's IRing row, not its no-annealing lesion (81.4) or IRing(+C_i) (84.3)
    assert paper_numbers.closest("iring")["top1"] == 83.9
    assert results_spec.paper_cell("iring").startswith("CIFAR-10 linear 83.9")
    assert results_spec.paper_cell("no_such_method") == "no comparable figure"


def test_page_is_written_from_the_runs(tmp_path, monkeypatch):
    def fake_compare(entries, seeds, sets, workdir, pretrain_only=False):
        rows = {
            name: [
                {"pretrained": {"probe": 0.5 + i / 100, "knn": 0.4}, "pretrain_s": 10.0 * (i + 1)}
                | ({"random": {"probe": 0.3, "knn": 0.2}} if index == 0 else {})
                for i in range(len(seeds))
            ]
            for index, (name, _, _) in enumerate(entries)
        }
        return rows, object()

    monkeypatch.setattr(compare_methods, "compare", fake_compare)
    monkeypatch.setattr(compare_methods, "raw_pixels", lambda config: 0.25)
    page = tmp_path / "results.md"
    compare_methods.results_page(str(page), "std")
    text = page.read_text()
    for group in results_spec.GROUPS:
        assert f"## {group['title']}" in text
        assert f"--workdir={group['workdir']}" in text
    # seeds 0.50 / 0.51 / 0.52: mean 51.00, sample std 1.00; the paper's figure in the last column
    assert "| iring_fashion_mnist train_subset=10000 bank_size=10000 | 51.00 ± 1.00 " in text
    assert "CIFAR-10 linear 83.9 (Ring Table 1(a) CIFAR-10) |" in text
    assert text.count("| raw pixels | 25.00 |") == len(results_spec.GROUPS)


def test_mean_std_and_summary():
    """The tables' cells: sample std (n − 1), 0 for one seed; 'range' is half the range."""
    values = [0.80, 0.83, 0.89]
    mean, std = compare_methods.mean_std(values, 100)
    assert mean == pytest.approx(84.0) and std == pytest.approx(((16 + 1 + 25) / 2) ** 0.5)
    assert compare_methods.mean_std([0.5]) == (0.5, 0.0)
    assert compare_methods.summary(values) == f"84.00 ± {std:.2f} (80.00 / 83.00 / 89.00)"
    assert compare_methods.summary(values, "range") == "84.00 ± 4.50 (80.00 / 83.00 / 89.00)"
