"""experiments/speedrun_page.py: the lever lines and the thresholds, from made-up recipe entries."""

from __future__ import annotations

from experiments import speedrun_page


def _entry(method: str, probe: list[float], knn: list[float], cpu_min: float | None = 10.0):
    return dict(method=method, probe=probe, knn=knn, cpu_min=cpu_min)


def test_each_lever_is_read_against_the_recipe_it_moves_from():
    entries = [
        _entry("scce", [0.85], [0.75]),
        _entry("scce+stride2", [0.86, 0.87, 0.85], [0.79, 0.80, 0.78]),
        _entry("scce+stride2+lr0.12", [0.87], [0.78]),
        _entry("mocov2+stride2", [0.80], [0.70]),  # its parent has no cells: no line
    ]
    lines = speedrun_page.lever_effects(entries)
    assert lines == [
        "- `scce+stride2` against `scce`: probe +1.00, kNN +4.00; 3 against 1 seeds",
        "- `scce+stride2+lr0.12` against `scce+stride2`: probe +1.00 (its std 1.00), "
        "kNN -1.00 (its std 1.00); 1 against 3 seeds",
    ]


def test_the_fastest_recipe_over_a_threshold():
    entries = [_entry("a", [0.86], [0.7], 20.0), _entry("b", [0.855], [0.8], 11.0)]
    assert speedrun_page.fastest(entries, "probe", 0.85).startswith("`b` (11.0 CPU min, 85.50)")
    assert speedrun_page.fastest(entries, "probe", 0.859).startswith("`a` (20.0 CPU min")
    assert speedrun_page.fastest(entries, "probe", 0.9) == "none yet"
