"""results/official.md: each method's official code beside ours at one budget, from the
cells of an `official_*` grid and of the grid it mirrors, with the shim table, the loss curves and
each method's reasoning where the sides differ (`findings/<method>.md`, no numbers of the cells).

    python experiments/official/page.py            # after campaign.py --grid=official_cpu_long
"""

from __future__ import annotations

import os
import re
import time

import numpy as np

from experiments import campaign_cells, campaign_page, grids
from experiments.official import bench_cpu, checkouts, harness, runner

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "results", "official.md")
# (official grid, the grid of ours it mirrors)
PAIRS = (("official_cpu_long", "cpu_long"), ("official_cpu_long_color", "cpu_long_color"))
VARIANTS = "cpu_long_variants"  # ours with one of the official run's settings at a time
LATE = 0.8  # the loss column: the mean logged loss over the last fifth of the steps


def same_or_differs(official: list[float], ours: list[float]) -> str:
    """'same within the seeds' spread' when the gap of the means is within the sum of the two
    sample stds, else 'differs by X points'; 'not judged' on fewer than 2 seeds a side."""
    if min(len(official), len(ours)) < 2:
        return "not judged yet (fewer than 2 seeds a side)"
    (mo, so), (mu, su) = campaign_page.mean_std(official), campaign_page.mean_std(ours)
    if abs(mo - mu) <= so + su:
        return f"same within the seeds' spread (official {mo:.2f} ± {so:.2f}, ours {mu:.2f} ± {su:.2f})"
    return (
        f"differs by {mo - mu:+.2f} points (official {mo:.2f} ± {so:.2f}, ours {mu:.2f} ± {su:.2f})"
    )


def loss_figure(method: str, sides: list[tuple[str, list[dict]]], path: str) -> bool:
    """Every seed's loss curve of each side (official, ours, ours at official settings), one
    colour a side."""
    colours = ("C1", "C0", "C2", "C3", "C4", "C5")
    curves = [
        (r["loss_curve"], side, colour)
        for (side, records), colour in zip(sides, colours)
        for r in records
        if r.get("loss_curve")
    ]
    if not curves:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    labelled = set()
    for curve, side, colour in curves:
        steps, values = np.array(curve).T
        label = None if side in labelled else side.replace("`", "").replace(f" ({VARIANTS})", "")
        labelled.add(side)
        ax.plot(steps, values, color=colour, alpha=0.7, lw=1, label=label)
    ax.set(
        xlabel="step",
        ylabel="training loss (InfoNCE; JCL: ce + jcl_loss)",
        title=f"{method}: every seed, each side",
    )
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


FINDINGS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "findings")


def finding(method: str, folder: str = FINDINGS) -> list[str]:
    """The paragraphs of `findings/<method>.md` (the reasoning where the two sides differ; its
    numbers are the tables'), each on one line; none without the file."""
    path = os.path.join(folder, f"{method}.md")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        paragraphs = re.split(r"\n\s*\n", f.read())
    return [" ".join(p.split()) for p in paragraphs if p.strip()]


def late_loss(records: list[dict]) -> str:
    """Mean over the seeds of each run's mean logged loss over its last fifth of steps."""
    means = []
    for r in records:
        curve = r.get("loss_curve") or []
        if curve:
            last = curve[-1][0]
            means.append(np.mean([v for step, v in curve if step > LATE * last]))
    return f"{np.mean(means):.2f}" if means else "–"


def shims_run(records: list[dict], name: str) -> str:
    """The shim tables the cells ran under (their `shim_hash`), and today's where it differs."""
    now = checkouts.shim_hash(name)
    ran = sorted({r["shim_hash"] for r in records if r.get("shim_hash")}) or [now]
    text = "shims " + ", ".join(f"`{h}`" for h in ran)
    return text if ran == [now] else f"{text} (the table below is `{now}`)"


def official_row_of(variant: str, official_methods: set[str]) -> str | None:
    """The official row a variant of ours sits beside: the longest official method it extends
    ('interclr+offline+keybn64' → 'interclr+offline', 'scce+independent' → 'scce')."""
    owners = [m for m in official_methods if variant.startswith(m + "+")]
    return max(owners, key=len) if owners else None


def method_rows(official_grid: grids.Grid, ours_grid: grids.Grid) -> list[str]:
    found = campaign_cells.read_cells(campaign_cells.RESULTS_DIR, official_grid)
    mine = campaign_cells.read_cells(campaign_cells.RESULTS_DIR, ours_grid)
    variants = campaign_cells.read_cells(campaign_cells.RESULTS_DIR, grids.GRIDS[VARIANTS])
    out = []
    for section in official_grid.sections:
        for method, _ in section.methods:
            if method.endswith(runner.OUR_VIEWS):  # a side of its method's table, not a table
                continue
            official = [
                r for r in found.values() if (r["section"], r["method"]) == (section.key, method)
            ]
            ours = [  # a '+settings' cell of the official grid reads ours at those settings
                r
                for r in (variants if "+" in method else mine).values()
                if (r["section"], r["method"]) == (section.key, method)
            ]
            checkout = checkouts.CHECKOUTS[harness.METHODS[method][0]]
            out += [
                f"### {method} ({section.key})",
                "",
                f"Official: `{checkout.repo}` @ `{checkout.commit[:8]}`, {shims_run(official, checkout.name)}.",
                "",
                "| side | linear probe top-1 (%) | kNN top-1 (%) | seeds | pretraining CPU min "
                "(median) | training loss, last fifth |",
                "|---|---|---|---|---|---|",
            ]
            ours_side = f"ours ({VARIANTS})" if "+" in method else "ours"
            sides = [("official", official), (ours_side, ours)]
            stored = [
                r
                for r in found.values()
                if (r["section"], r["method"]) == (section.key, method + runner.OUR_VIEWS)
            ]
            if stored:
                sides.append(
                    (f"official, our pipeline's views (`{method}{runner.OUR_VIEWS}`)", stored)
                )
            own_rows = {m for s in official_grid.sections for m, _ in s.methods}
            extra = []
            for name in sorted({r["method"] for r in variants.values()} - own_rows):
                if official_row_of(name, own_rows) == method:
                    rows = [r for r in variants.values() if r["method"] == name]
                    sides.append((f"ours `{name}` ({VARIANTS})", rows))
                    extra.append((name, rows))
            for side, records in sides:
                if not records:
                    out.append(f"| {side} | – | – | 0 | – | – |")
                    continue
                cpu = [r.get("pretrain_cpu_s") for r in records if r.get("pretrain_cpu_s")]
                minutes = f"{np.median(cpu) / 60:.1f}" if cpu else "not recorded"
                out.append(
                    f"| {side} | {campaign_page.summary([r['probe_top1'] for r in records])} "
                    f"| {campaign_page.summary([r['knn_top1'] for r in records])} | {len(records)} "
                    f"| {minutes} | {late_loss(records)} |"
                )
            out += [
                "",
                f"- probe: {same_or_differs([r['probe_top1'] for r in official], [r['probe_top1'] for r in ours])}",
                f"- kNN: {same_or_differs([r['knn_top1'] for r in official], [r['knn_top1'] for r in ours])}",
            ]
            for name, rows in extra:  # ours at the official run's settings, judged the same way
                out.append(
                    f"- ours `{name}`: probe "
                    f"{same_or_differs([r['probe_top1'] for r in official], [r['probe_top1'] for r in rows])}"
                    f"; kNN {same_or_differs([r['knn_top1'] for r in official], [r['knn_top1'] for r in rows])}"
                )
            for paragraph in finding(method):
                out += ["", paragraph]
            figure = os.path.join(ROOT, "results", f"official_{method}_loss.png")
            if loss_figure(method, sides, figure):
                out += ["", f"![loss curves]({os.path.basename(figure)})"]
            out.append("")
    return out


HEADER = """# The official implementations beside ours

Each method's authors' code, trained on the same data at the same budget with the same network and
recipe as our cell of the same method, and scored by the same probe and kNN (our
`evaluators.probe_and_knn` on the query encoder's pooled last stage, all 60k / 10k images; CMC: both
views' encoders, concatenated). Made by `python experiments/official/page.py` on {date} from the
cells of grids `official_cpu_long` and `cpu_long` (Fashion-MNIST) and `official_cpu_long_color` and
`cpu_long_color` (color_fashion_mnist) in [`results/`](.).

```bash
# once: the official checkout outside this repository and its own venv
git clone https://github.com/facebookresearch/moco ../official/moco && git -C ../official/moco checkout 78b69caf
git clone https://github.com/caiqi/Joint-Contrastive-Learning ../official/jcl && git -C ../official/jcl checkout 1cefabb8
git clone https://github.com/mhw32/contrastive-ring-public ../official/ring && git -C ../official/ring checkout fb3e1c26
git clone https://github.com/CEA-LIST/SCE ../official/sce && git -C ../official/sce checkout 07cbe636
git clone https://github.com/KyleZheng1997/ReSSL ../official/ressl && git -C ../official/ressl checkout 4d67daaa
git clone https://github.com/open-mmlab/mmselfsup ../official/mmselfsup && git -C ../official/mmselfsup checkout 920deff1
git clone https://github.com/HobbitLong/CMC ../official/cmc && git -C ../official/cmc checkout 7b227be0
git clone https://github.com/HobbitLong/PyContrast ../official/pycontrast && git -C ../official/pycontrast checkout 84f94eab
python3 -m venv ../official_venv
../official_venv/bin/pip install -r experiments/official/requirements-official.txt
../official_venv/bin/pip install --no-deps torchvision==0.28.0
SSL_JAX_OFFICIAL_THREADS=1 nice -n 19 python experiments/campaign.py --grid=official_cpu_long   # 3 seeds a method
SSL_JAX_OFFICIAL_THREADS=1 nice -n 19 python experiments/campaign.py --grid=official_cpu_long_color
nice -n 19 python experiments/campaign.py --grid=cpu_long_color   # ours beside it
python experiments/official/page.py
```

A verdict is *same within the seeds' spread* when the gap of the means is within the sum of the two
sample stds, else *differs by X points*. The budget is `cpu_long`'s: ResNet-18 width 1/2 with the
ImageNet stem on 28-px grey images, batch 64, 3,000 steps of SGD at lr 0.06 (cosine), the first
10,000 training images; the colour pair's is the same on 32-px color_fashion_mnist as generated,
each method's lr schedule the official code's (its grid's text says which).
"""


def shim_table(name: str) -> list[str]:
    rows = ["| official code | what it does there | what runs here instead |", "|---|---|---|"]
    rows += [  # a file:line with code spans of its own is not wrapped in one
        f"| {where if '`' in where else f'`{where}`'} | {what} | {instead} |"
        for where, what, instead in checkouts.SHIMS[name]
    ]
    return rows


def cpu_time_section(path: str = bench_cpu.OUT) -> list[str]:
    """`bench_cpu.py`'s table: each side's CPU minutes for one cell, timed one after the other;
    each row says when, at which commit and by which command it was measured (a later run of a
    few methods replaces only their rows)."""
    if not os.path.exists(path):
        return []
    rows = bench_cpu.measured_rows(path)
    out = [
        "## CPU time, one after the other",
        "",
        "Each method's `official_cpu_long` cell (seed 0), the official code and then ours, each in "
        "its own process on one core that no other job used, at two step counts. The CPU seconds "
        "of the training (data, model, compile and steps; not the features or the probe) at the "
        "two step counts give a fixed cost and a cost a step; a cell is the fixed cost plus its "
        "steps. The cells' own CPU minutes in the tables above ran beside other jobs, ours with "
        "the kNN monitor on. Ours' fixed cost holds the tf.data set-up, the state's init, XLA's "
        "compile of the step and the last checkpoint; the official code compiles nothing. IRing's "
        "ring is found, in ours, by exact ranks on the sharded bank (`bank_search`: the bank and "
        "the `[B, N]` similarities are never gathered, for pods), and its draws with replacement "
        "read one 32-row bit word each (`bank_search._select_bit`, 2026-11-28; before it, 32 "
        "rows each, and ours took 0.66× the official time); one process of the official code "
        "takes `torch.topk` of the outer fraction of the 10,000 scores per query "
        "(`src/objectives/instdisc.py:129`).",
        "",
        "| method | official: CPU min a cell | ours: CPU min a cell | official / ours "
        "| official: s a step, fixed s | ours: s a step, fixed s | measured |",
        "|---|---|---|---|---|---|---|",
    ]

    def fixed(seconds: float) -> str:  # a fit's fixed cost within a second of 0 is 0
        return f"{seconds:.0f}" if round(seconds) else "0"

    commands = []
    for method, row in rows.items():
        o, u = row["official"], row["ours"]
        n1, n2 = row["steps"]
        command = row["command"]
        if command not in commands:
            commands.append(command)
        out.append(
            f"| {method} | {o['cell_min']:.1f} | {u['cell_min']:.1f} "
            f"| {row['official_over_ours']:.2f} | {o['per_step_s']:.3f}, {fixed(o['fixed_s'])} "
            f"| {u['per_step_s']:.3f}, {fixed(u['fixed_s'])} "
            f"| {row['date']}, `{row['commit'][:8]}`, {n1} and {n2} steps, "
            f"CPU {', '.join(map(str, row['cores']))}, command {commands.index(command) + 1} |"
        )
    out += ["", "Commands:", ""]
    out += [f"{i + 1}. `{command}`" for i, command in enumerate(commands)]
    return out + [""]


def write(path: str = PAGE) -> None:
    out = [HEADER.format(date=time.strftime("%Y-%m-%d"))]
    for official_name, ours_name in PAIRS:
        out += [f"## `{official_name}` beside `{ours_name}`", ""]
        out += method_rows(grids.GRIDS[official_name], grids.GRIDS[ours_name])
    out += cpu_time_section()
    out += ["## The shims", ""]
    for name, checkout in checkouts.CHECKOUTS.items():
        out += [
            f"### {checkout.repo} @ `{checkout.commit[:8]}` (shims `{checkouts.shim_hash(name)}`)",
            "",
            "Everything not listed (the loss, the queue update, the EMA, the optimiser step and the "
            "order the trainer calls them in) is the official function.",
            "",
        ]
        out += shim_table(name) + [""]
    with open(path, "w") as f:
        f.write("\n".join(out).rstrip() + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    write()
