"""docs/experiments/official.md: each method's official code beside ours at one budget, from the
cells of an `official_*` grid and of the grid it mirrors, with the shim table and the loss curves.

    python experiments/official/page.py            # after campaign.py --grid=official_cpu_long
"""

from __future__ import annotations

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

from experiments import campaign, grids  # noqa: E402
from experiments.official import bench_cpu, checkouts, harness, runner  # noqa: E402

PAGE = os.path.join(ROOT, "docs", "experiments", "official.md")
PAIRS = (("official_cpu_long", "cpu_long"),)  # (official grid, the grid of ours it mirrors)
VARIANTS = "cpu_long_variants"  # ours with one of the official run's settings at a time
LATE = 0.8  # the loss column: the mean logged loss over the last fifth of the steps


def same_or_differs(official: list[float], ours: list[float]) -> str:
    """'same within the seeds' spread' when the gap of the means is within the sum of the two
    sample stds, else 'differs by X points'; 'not judged' on fewer than 2 seeds a side."""
    if min(len(official), len(ours)) < 2:
        return "not judged yet (fewer than 2 seeds a side)"
    (mo, so), (mu, su) = campaign.mean_std(official), campaign.mean_std(ours)
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


# What was found where the two sides differ, per method (dated; the figures are the cells').
FINDINGS = {
    "mocov2": """
Probe and kNN agree within the seeds' spread. The training loss does not: the official run's ends
lower (mean of the last fifth of the steps 5.70 against 6.06, every seed of each side lower than
every seed of the other). Two settings differ between the runs, not the code: one process of the
official code computes the keys' BN over the whole batch of 64 (`moco/builder.py:69-113` has no
per-GPU groups in one process), ours over two shuffled groups of 32 (`key_bn_group_size=32`), and
`main_moco.py:372-381` steps the cosine lr once per epoch, ours every step. Ours with either
official setting (`cpu_long_variants`, 2026-11-27: whole-batch key BN at seeds 0 and 1, per-epoch
lr at seed 0) closes part of the gap (5.86 and 5.99) and stays within the spread on the probe and
kNN. Both settings together (2026-11-28, three seeds) end at 5.93 / 5.72 / 5.74 against the
official 5.61 / 5.77 / 5.74: two of the three seeds on the official level, the mean 0.10 above
(5.80 against 5.70), so the two settings account for most of the gap (as they do for MoCoRing's,
below), with probe / kNN 82.34 ± 0.75 / 74.91 ± 1.19, within the spread of the official seeds. The
rest (0.10) is within the seeds' spread of either side (std 0.09 and 0.12); the checks made for MoCoRing
(below: the views' statistics, the initialisation's distribution, the evaluation path) found no
difference there, and MoCo v2 shares those parts. The cells' CPU minutes ran
beside other work; the timing one after the other is the section "CPU time, one after the other".
""",
    "jcl": """
Probe and kNN agree within the seeds' spread, and so does the training loss (ce + jcl_loss, the
loss the optimiser steps on): from step ~100 on the official curves lie among ours, and the mean
of the last fifth is 5.48 / 5.42 / 5.50 for official seeds 0-2 against 5.55 / 5.51 / 5.48 for ours
(the first logged point, 6.8 against 6.15, differs as in MoCo v2). The numbers are the same on both
sides (checked 2026-11-28): ResNet-18 width 1/2 with the ImageNet stem, MLP 256-128, batch 64,
3,000 steps (156 an epoch: 20 epochs, the last cut at 36 steps), SGD lr 0.06 momentum 0.9 wd 5e-4,
τ 0.2, m 0.99 before the keys, a queue of 4,096 mean keys (not re-normalised), M' = 4 (5 crops of
one recipe), λ = 2.0 ramped per epoch as 2.0·(epoch + 1)/20: the official run records the λ each
epoch's forwards got (0.1, 0.2, …, 2.0 in every cell), ours `lam_at` gives the same with 156 steps
an epoch and 20 epochs. Three settings differ, not the code: the keys' BN (one process of the
official code: all 256 key crops in one BN; ours: 2 shuffled groups of 128, what each of the
official 8 GPUs saw), the lr (official cosine stepped once per epoch, `main_moco.py:425-434`; ours
every step) and the logging (the official curve is one step's loss every 20 steps, ours the mean of
the 20: its smoother line). Neither shows in the figures at this budget. The official cells ran
with one torch thread (`SSL_JAX_OFFICIAL_THREADS=1`: with two, beside the other jobs on the 2-core
machine, torch's OpenMP workers spin-wait, 4.5 s a step against 0.14 s in a short test) and beside
other work; the timing one after the other is the section "CPU time, one after the other".
""",
    "ir": """
Three seeds of the official code (2026-11-28): the Ring code's `NCE` on its `MemoryBank` at our
config's numbers (4,096 draws beside the positive: its k = 4,097, bank momentum 0.5, normal bank
rows) escapes the near-collapse as ours does, and probe and kNN agree within the seeds' spread
(79.77 ± 0.88 / 67.98 ± 1.86 against ours' 81.08 ± 1.24 / 70.39 ± 3.48). Its loss over the last
fifth (7.22 / 7.33 / 7.19) lies on ours' seeds 0 and 1 (7.27 / 7.32); ours' seed 2 ends lower
(6.11) and is the best of the six on the probe and kNN (82.46 / 74.28). Timed one after the
other on one core (2026-11-28, `bench_cpu.py`), an official IR cell takes 20.2 CPU minutes (0.405 s
a step, against 0.112 s for the official IRing, which scores every bank row), ours 4.0 (0.070 s).
""",
    "iring": """
Three seeds of the official code (2026-11-28). The Ring code's `NCERing` at our
config's numbers (bank momentum 0.5, 4,096 ring draws beside the positive: its k = 4,097, normal
bank rows, outer / inner 0.1 of the 10,000 rows: draws from descending ranks 100-999) collapses as
ours does: its loss reaches ln 4,097 = 8.318 (the positive and every ring draw scored alike) at
step ~1,000 (within 0.1 of it from step 940-960 in all three seeds, within 0.02 from step 1,440 /
1,100 / 1,880) and stays there (ours: steps 960-1,120 over three seeds).
Its curves
lie on ours step for step, the jumps at each epoch's boundary included (156 steps: each image's
positive is its own bank row, written once an epoch). Probe 76.15 / 76.66 / 77.55 within ours'
range (71.44-79.85); kNN 57.38 / 68.27 / 64.83 on either side of ours' three (59.20-67.48): the
seeds spread as widely as ours on a collapsed encoder. The code's order, the loss on the stale bank, then the bank write under
no_grad inside `get_losses_for_batch` (`src/systems/systems.py:185-190`), then backward and the
step, is ours (`iring.loss_fn`, then `ir.update_buffers`); both sides compute the query's BN over
the whole batch of 64. So `cpu_long`'s IRing below IR is the budget and the method at it, not our
code.
""",
    "iring+official": """
Three seeds a side (2026-11-28). At the Ring code's own IR settings
(`config/pretrain/nce/nce_ring.json`: m 0, so the bank row is replaced by the new embedding, k
4,096 = 4,095 draws; `src/objectives/memory.py:17-24`: uniform rows) the official IRing collapses
sooner than at our config's: its loss is within 0.1 of ln 4,096 = 8.318 from step 480 in all three
seeds (at our config's numbers from ~950), and the probe and kNN fall to 74.69 ± 2.46 / 59.43 ±
7.45 (73.43 / 77.53 / 73.12; 52.49 / 67.31 / 58.49). Ours at the same settings
(`cpu_long_variants`' `iring+official`, through our config's overrides `bank_momentum=0
num_negatives=4095 bank_init=uniform`) collapses the same way, from step 500 / 500 / 640, with
75.72 ± 0.97 / 60.74 ± 6.47 (74.89 / 76.79 / 75.48; 61.90 / 66.55 / 53.76): the same within the
seeds' spread on both. What collapses, on each side alike: IRing at this budget at both settings,
sooner with the code's m 0; what does not: IR (three seeds a side). The kNN of a collapsed encoder
spreads over 14 points between seeds on both sides.
""",
    "mocoring": """
Six seeds of the official code (s0-s2 from 2026-11-28, s3-s5 added the same day: the grids'
`more_seeds`): the Ring code's `MoCoRing` at our config's numbers (τ 0.2, queue 4,096, m 0.99,
every entry of each query's ring: descending positions 40-408 of the queue, beside the positive)
and ours give the same probe and kNN within the seeds' spread, and neither side collapses. The
losses parted in the last fifth: the official ones stay near 4.5-4.6, ours (at our settings) rose
from ~4.65 at step 2,200 to 5.12-5.18 at step 3,000 in all three seeds. Found (2026-11-28,
`cpu_long_variants`): that is the two settings in which one process of the Ring code differs from
ours, not the code. Its keys' BN runs over the whole batch of 64 (the `shuffle_bn` branch of
`src/systems/systems.py:293-307` permutes the 64 keys and computes one BN over them), ours over two
shuffled groups of 32; and its `MoCoLRScheduler` (`src/utils/callbacks.py:18-30`) sets the cosine
lr once per epoch, ours every step. With the whole-batch key BN alone ours ends at 4.69 (seed 0,
still rising to 4.82 at step 3,000); with both settings (`mocoring+keybn64+epochlr`) the loss
follows the official one with no late rise (the table's last column). **The probe gap that three
seeds a side showed was the draws.** On seeds 0-2 the official code probed 83.46 ± 0.15 and ours
at the official settings 82.99 ± 0.15, a gap of 0.47 points, which the checks below could not
place. Three more seeds a side (s3-s5) give official 83.02 / 82.60 / 83.07 and ours 83.26 / 83.59
/ 83.05: on six seeds a side the official code probes 83.18 ± 0.36 and ours 83.14 ± 0.26, kNN
77.03 ± 0.47 against 77.30 ± 0.31, a gap of 0.04 probe points (−0.27 kNN), inside either side's
seed-to-seed spread. The official MoCoRing reading views our host pipeline made
(`mocoring+ourviews`: `runner.write_our_views`, the same recipe through `augment.apply_ops_uint8`,
in the place of torchvision's transform classes) probes 83.31 ± 0.21 and kNN 77.25 ± 0.34 on six seeds, within the same spread. The
checks made while the gap looked real, each finding no difference: the views' statistics (4,000
images, two views each: mean pixel 0.375 / 0.379, the two views' correlation 0.290 / 0.284, mean
|view 1 − view 2| 0.264 / 0.264, torchvision / ours); the network's initialisation (every conv
kernel's std over three draws, ours / torchvision's: 0.99 to 1.02); the evaluation
(`python experiments/official/cross_eval.py
--cell=cpu_long_variants.fashion_mnist.mocoring+keybn64+epochlr.s0`, and `.s1`: our encoders,
exported to the torchvision layout and read by the harness's feature path, give features within
8e-7 of ours and the same probe and kNN, 83.15 / 77.24 and 82.96 / 77.14 against 83.17 / 77.24
and 82.94 / 77.14); and, reading the Ring code, the queue's init and update, the EMA's place and
the per-epoch cosine's span. The figure draws all sides.
""",
    "scce": """
The official code is CEA-LIST/SCE, not its archived successor juliendenize/eztorch: both need
Lightning and hydra, but eztorch's package `__init__` imports all of it (video data sets,
SoccerNet, timm, pytorchvideo, torchaug), and its requirements pin torchvision 0.15.*, which needs
torch 2.0, not the official venv's 2.13; CEA-LIST/SCE's model, optimiser and scheduler modules
import under Lightning 2 with one module replaced (`sce/utils/strategies.py`, see the shims). Its
`sce/transforms` package cannot be imported at this commit at all (`__init__.py:14` imports a
file the commit lacks), so the released CIFAR-10 run, whose transforms are `_target_`s in that
package, cannot start from this commit as it stands. One difference in the
official code shows in the loss: the momentum trunk and projector are instantiated on their own
(`sce/models/siamese/momentum_base.py:53-54`; nothing copies the online weights into them), so for
the first few hundred steps the target relations come from a second random network; ours (and
eztorch) start the target as a copy of the online network (`ssl_jax/state.py:107`). The official
loss climbs higher and stays higher in every seed (mean of steps 200-400: 7.53-7.63 against
6.67-6.71 for ours; last fifth 6.88-7.23 against 6.72-6.78). A check (2026-11-28: the official
trainer, seed 0, 400 steps, the same run with the online weights loaded into the momentum networks
before the first step): mean loss over steps 200-400 of 7.90 as is and 7.14 with the copy, so the
un-copied start accounts for most of the early gap. It also accounts for the probe and kNN gap
(2026-11-28, `cpu_long_variants`' `scce+independent`, three seeds: ours with
`ema.target_init=independent`, the target drawn on its own as the official code instantiates it):
probe 83.02 ± 0.51 and kNN 75.66 ± 0.35, against the official 82.45 ± 0.49 / 74.93 ± 1.67 (each
within the two spreads) and ours with the copy 83.42 ± 0.38 / 77.17 ± 0.32; its loss over steps
200-400 is 7.54 (official 7.62, ours with the copy 6.69) and over the last fifth 6.88 (7.04 and
6.76). So the gap is the official code's un-copied start, not a fault in ours; ours keeps the copy
(eztorch's, and MoCo's) as its default, the official behaviour one override away. Settings that differ, not the code: the cosine lr spans the 20 epochs the step
count starts (3,120 steps, cut at 3,000; ours 3,000), the official curve is one step's loss every
20 steps (ours the mean of the 20). The official cells ran with one torch thread beside other
work; the timing one after the other is the section "CPU time, one after the other".
""",
    "ressl": """
Four differences in the official code, each named where it is: the projection head is
`Linear(bias) → ReLU → Linear` without BatchNorm (`network/head.py:24-36`; ours is SCE's CIFAR
projector, `Linear(no bias) → BN → ReLU → Linear`, as `configs/ressl_fashion_mnist.py` inherits it),
the EMA runs before the keys (`network/ressl.py:121`, MoCo's order; ours after the optimiser step,
SCE's order shared through `ssl_jax/methods/ressl.py`), parameters whose name holds 'bn' or 'bias'
get no weight decay (`ressl.py:104-109`; ours decays all), and one process computes the keys' BN
over the whole batch of 64 (ours: the target backbone's BN in 8 shuffled groups of 8). The loss and queue are the same formula
(τ 0.1 fixed at `ressl.py:68`, τ_m 0.04 from `--t`). The official training loss ends lower in
every seed (last fifth 6.26-6.47 against 7.04-7.35 for ours), so the two runs do not train the
same network; the probe and kNN still agree within the seeds' spread. Which of the four moves the
loss is not checked yet (one variant at a time). The cosine lr spans the 20 epochs the step count starts (3,120
steps, cut at 3,000).
""",
}


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


def method_rows(official_grid: grids.Grid, ours_grid: grids.Grid) -> list[str]:
    found = campaign.read_cells(campaign.RESULTS_DIR, official_grid)
    mine = campaign.read_cells(campaign.RESULTS_DIR, ours_grid)
    variants = campaign.read_cells(campaign.RESULTS_DIR, grids.GRIDS[VARIANTS])
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
            for name in sorted({r["method"] for r in variants.values()} - own_rows):
                if grids.method_key(name) == method:
                    rows = [r for r in variants.values() if r["method"] == name]
                    sides.append((f"ours `{name}` ({VARIANTS})", rows))
            for side, records in sides:
                if not records:
                    out.append(f"| {side} | – | – | 0 | – | – |")
                    continue
                cpu = [r.get("pretrain_cpu_s") for r in records if r.get("pretrain_cpu_s")]
                minutes = f"{np.median(cpu) / 60:.1f}" if cpu else "not recorded"
                out.append(
                    f"| {side} | {campaign.summary([r['probe_top1'] for r in records])} "
                    f"| {campaign.summary([r['knn_top1'] for r in records])} | {len(records)} "
                    f"| {minutes} | {late_loss(records)} |"
                )
            out += [
                "",
                f"- probe: {same_or_differs([r['probe_top1'] for r in official], [r['probe_top1'] for r in ours])}",
                f"- kNN: {same_or_differs([r['knn_top1'] for r in official], [r['knn_top1'] for r in ours])}",
            ]
            if method in FINDINGS:
                out += ["", " ".join(FINDINGS[method].split())]
            figure = os.path.join(ROOT, "docs", "experiments", f"official_{method}_loss.png")
            if loss_figure(method, sides, figure):
                out += ["", f"![loss curves]({os.path.basename(figure)})"]
            out.append("")
    return out


HEADER = """# The official implementations beside ours

Each method's authors' code, trained on the same data at the same budget with the same network and
recipe as our cell of the same method, and scored by the same probe and kNN (our
`evaluators.probe_and_knn` on the query encoder's pooled last stage, all 60k / 10k Fashion-MNIST
images). Made by `python experiments/official/page.py` on {date} from the cells of
grids `official_cpu_long` and `cpu_long` in [`docs/results/`](../results/).

```bash
# once: the official checkout outside this repository and its own venv
git clone https://github.com/facebookresearch/moco ../official/moco && git -C ../official/moco checkout 78b69caf
git clone https://github.com/caiqi/Joint-Contrastive-Learning ../official/jcl && git -C ../official/jcl checkout 1cefabb8
git clone https://github.com/mhw32/contrastive-ring-public ../official/ring && git -C ../official/ring checkout fb3e1c26
git clone https://github.com/CEA-LIST/SCE ../official/sce && git -C ../official/sce checkout 07cbe636
git clone https://github.com/KyleZheng1997/ReSSL ../official/ressl && git -C ../official/ressl checkout 4d67daaa
git clone https://github.com/open-mmlab/mmselfsup ../official/mmselfsup && git -C ../official/mmselfsup checkout 920deff1
python3 -m venv ../official_venv
../official_venv/bin/pip install -r experiments/official/requirements-official.txt
../official_venv/bin/pip install --no-deps torchvision==0.28.0
SSL_JAX_OFFICIAL_THREADS=1 nice -n 19 python experiments/campaign.py --grid=official_cpu_long   # 3 seeds a method
python experiments/official/page.py
```

A verdict is *same within the seeds' spread* when the gap of the means is within the sum of the two
sample stds, else *differs by X points*. The budget is `cpu_long`'s: ResNet-18 width 1/2 with the
ImageNet stem on 28-px grey images, batch 64, 3,000 steps of SGD at lr 0.06 (cosine), the first
10,000 training images.
"""


def shim_table(name: str) -> list[str]:
    rows = ["| official code | what it does there | what runs here instead |", "|---|---|---|"]
    rows += [
        f"| `{where}` | {what} | {instead} |" for where, what, instead in checkouts.SHIMS[name]
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
