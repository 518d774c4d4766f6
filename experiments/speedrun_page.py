"""results/cpu_speedrun.md: the `cpu_speedrun` grid as a curve, probe and kNN top-1 against
the CPU minutes of pretraining, one point per recipe (mean over its seeds), with each recipe's
command and the fastest recipe that reaches each threshold (raw pixels, pixels + 2, pixels + 4 on
the probe; pixels on kNN).

    python experiments/speedrun_page.py        # after campaign.py --grid=cpu_speedrun
"""

from __future__ import annotations

import os
import time

import numpy as np

from experiments import campaign_cells, campaign_page, compare_methods, grids

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, "results", "cpu_speedrun.md")
FIGURE = os.path.join(ROOT, "results", "cpu_speedrun.png")


def recipes(grid: grids.Grid, section: grids.Section, done: dict) -> list[dict]:
    """One entry per trained recipe with cells: its name, command, seeds' probe / kNN and the
    median CPU minutes of its pretraining."""
    rows = campaign_page.section_rows(grid, section, done)
    out = []
    for method, spec in section.methods:
        records = rows.get(method, [])
        if not records:
            continue
        # a cell resumed from a checkpoint measured only its last part
        cpu = [
            r["pretrain_cpu_s"]
            for r in records
            if r.get("pretrain_cpu_s") and not r.get("resumed_from_step")
        ]
        _, path, own = compare_methods.parse_entry(spec)
        sets = {}  # the effective overrides: a later value of a key replaces the earlier one
        for item in [*grid.sets, *section.sets, *own]:
            key, _, value = item.partition("=")
            sets[key] = value
        sets = [f"{key}={value}" for key, value in sets.items()]
        out.append(
            dict(
                method=method,
                command=f"python -m ssl_jax.main --config={path} "
                + " ".join(f"--config.{s}" for s in sets),
                probe=[r["probe_top1"] for r in records],
                knn=[r["knn_top1"] for r in records],
                cpu_min=float(np.median(cpu)) / 60 if cpu else None,
                random=section.random_init_row(method),
            )
        )
    return out


def fastest(entries: list[dict], key: str, level: float) -> str:
    reached = [e for e in entries if e["cpu_min"] and np.mean(e[key]) > level]
    if not reached:
        return "none yet"
    best = min(reached, key=lambda e: e["cpu_min"])
    return f"`{best['method']}` ({best['cpu_min']:.1f} CPU min, {np.mean(100 * np.asarray(best[key])):.2f})"


def lever_effects(entries: list[dict]) -> list[str]:
    """One line per recipe whose parent (its name less the last `+lever`) has cells: the change
    of the mean probe and kNN, in points, with both sides' seed counts and the parent's std."""
    by_name = {e["method"]: e for e in entries}
    out = []
    for e in entries:
        parent = by_name.get(e["method"].rpartition("+")[0])
        if parent is None:
            continue
        parts = []
        for key, label in (("probe", "probe"), ("knn", "kNN")):
            delta = 100 * (np.mean(e[key]) - np.mean(parent[key]))
            std = 100 * np.std(parent[key], ddof=1) if len(parent[key]) > 1 else None
            spread = "" if std is None else f" (its std {std:.2f})"
            parts.append(f"{label} {delta:+.2f}{spread}")
        out.append(
            f"- `{e['method']}` against `{parent['method']}`: {', '.join(parts)}; "
            f"{len(e['probe'])} against {len(parent['probe'])} seeds"
        )
    return out


def figure(entries: list[dict], pixels: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, key, label in ((axes[0], "probe", "linear probe"), (axes[1], "knn", "kNN")):
        for e in entries:
            if e["cpu_min"] is None:
                continue
            values = 100 * np.array(e[key])
            ax.errorbar(
                e["cpu_min"],
                values.mean(),
                yerr=values.std(ddof=1) if len(values) > 1 else 0,
                fmt="o",
                capsize=3,
            )
            ax.annotate(
                e["method"],
                (e["cpu_min"], values.mean()),
                fontsize=7,
                xytext=(4, 2),
                textcoords="offset points",
            )
        if pixels.get(key) is not None:
            ax.axhline(100 * pixels[key], color="grey", ls="--", label="raw pixels")
        ax.set(xlabel="CPU minutes of pretraining (median over seeds)", ylabel=f"{label} top-1 (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle("cpu_speedrun: Fashion-MNIST, all 60k images, pooled last stage", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write(path: str = PAGE) -> None:
    grid = grids.CPU_SPEEDRUN
    expected = campaign_cells.grid_protocol(grid)
    done, _ = campaign_cells.protocol_cells(
        campaign_cells.read_cells(campaign_cells.RESULTS_DIR, grid), grid
    )
    section = grid.sections[0]
    rows = campaign_page.section_rows(grid, section, done)
    entries = recipes(grid, section, done)
    raw = rows.get("raw_pixels", [])
    pixels = {"probe": raw[0]["probe_top1"], "knn": raw[0]["knn_top1"]} if raw else {}
    out = [
        "# The CPU speedrun: the least CPU time in which an encoder beats raw pixels",
        "",
        f"Made by `python experiments/speedrun_page.py` on {time.strftime('%Y-%m-%d')} from the cells "
        "of grid `cpu_speedrun` (its table in [results/README.md](README.md)). "
        f"Every cell pretrains on all 60,000 Fashion-MNIST training images and is scored on all 60k / "
        f"10k by `{expected}` on the pooled last stage (the papers' protocol). CPU minutes: user + "
        "system time of the pretraining process (every thread), the median over the recipe's seeds; "
        "the cells ran at low priority beside other work.",
        "",
        "| recipe | CPU min | probe top-1 (%) | kNN top-1 (%) | seeds | its random init (probe / kNN) |",
        "|---|---|---|---|---|---|",
    ]
    for e in entries:
        base = rows.get(e["random"], [])
        base_text = (
            f"{campaign_page.summary([r['probe_top1'] for r in base])} / "
            f"{campaign_page.summary([r['knn_top1'] for r in base])}"
            if base
            else "–"
        )
        minutes = "–" if e["cpu_min"] is None else f"{e['cpu_min']:.1f}"
        out.append(
            f"| `{e['method']}` | {minutes} | {campaign_page.summary(e['probe'])} "
            f"| {campaign_page.summary(e['knn'])} | {len(e['probe'])} | {base_text} |"
        )
    if pixels:
        out.append(
            f"| raw pixels | – | {100 * pixels['probe']:.2f} | {100 * pixels['knn']:.2f} | – | – |"
        )
        out += [
            "",
            "The fastest recipe over each threshold (mean over its seeds):",
            "",
            f"- probe > pixels ({100 * pixels['probe']:.2f}): {fastest(entries, 'probe', pixels['probe'])}",
            f"- probe > pixels + 2: {fastest(entries, 'probe', pixels['probe'] + 0.02)}",
            f"- probe > pixels + 4: {fastest(entries, 'probe', pixels['probe'] + 0.04)}",
            f"- kNN > pixels ({100 * pixels['knn']:.2f}): {fastest(entries, 'knn', pixels['knn'])}",
        ]
    effects = lever_effects(entries)
    if effects:
        out += [
            "",
            "What each lever moved, in points of the mean (the recipe against the one it "
            "moves a lever from):",
            "",
            *effects,
        ]
    if entries:
        figure(entries, pixels, FIGURE)
        out += ["", f"![probe and kNN against CPU minutes]({os.path.basename(FIGURE)})"]
    missing = [c.name for c in grids.cells(grid) if c.name not in done]
    out += ["", "## Each recipe's command", ""]
    out += [f"- `{e['method']}`: `{e['command']}`" for e in entries] or [
        "No recipe has a cell yet."
    ]
    if missing:
        out += [
            "",
            f"Cells not run yet ({len(missing)}): " + ", ".join(f"`{m}`" for m in missing) + ".",
        ]
    with open(path, "w") as f:
        f.write("\n".join(out).rstrip() + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    write()
