"""The results page (`results/README.md`) and the README's glance table, made from the cells alone:
each grid's tables (mean ± std over the seeds, the baselines, the paper's closest figure), its kNN
curves, and every method against the baselines and the papers' orderings (`verdict`). The other
pages (`detection_page.py`, `speedrun_page.py`, `official/page.py`) use its summaries."""

from __future__ import annotations

import os
import time

import numpy as np

from experiments import compare_methods, grids, paper_numbers
from experiments.campaign_cells import RESULTS_DIR, protocol_cells, read_cells


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


def section_rows(grid: grids.Grid, section: grids.Section, done: dict) -> dict[str, list[dict]]:
    """{method: its finished seed records, in seed order} of a section, baselines included."""
    rows: dict[str, list[dict]] = {}
    for cell in grids.cells(grid):
        if cell.section == section.key and cell.name in done:
            rows.setdefault(cell.method, []).append(done[cell.name])
    return rows


def section_table(grid: grids.Grid, section: grids.Section, done: dict) -> list[str]:
    rows = section_rows(grid, section, done)
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
    rows = section_rows(grid, section, done)
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
    rows = section_rows(grid, section, done)
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

This folder holds what the studies measured, apart from the user docs in `docs/`: the cells,
`<grid>/<cell>.json` (and their pictures), and the pages made from them, flat beside this one:
this page, [official.md](official.md) (the official code beside ours),
[cpu_speedrun.md](cpu_speedrun.md) (the CPU speedrun's curve), [detection.md](detection.md)
(detection transfer); also `official_cpu_time.json` and `view_studies/` (InfoMin's view studies).

Made by `python experiments/campaign.py --page=results/README.md` from the cells in
`results/<grid>/` on {date}. Each cell is one run (a method, a seed, a budget) written
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
    rows = section_rows(grid, section, done)
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
