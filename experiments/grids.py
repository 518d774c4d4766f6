"""The results campaign's grids (`experiments/campaign.py`): each a fixed list of cells at one budget.

A grid has sections (one data set's table each); a section has methods (a config with its own
overrides) trained at every seed, plus two baselines: the first method's encoder at random init
(one cell per seed) and a linear probe / kNN on raw pixels (one cell). A cell is named
`<section>.<method>.s<seed>` (`<section>.random_init.s<seed>`, `<section>.raw_pixels`) and its
result is `results/<grid>/<cell>.json`. Changing a grid's budget makes its cells stale: give
the changed grid a new name instead, so that finished cells always mean what the grid says.

- `cpu600`: the 600-step CPU tables that the results page has carried since 2026-11-24 (ResNet-18
  with the ImageNet stem, batch 64, SGD 0.06, the first 10,000 training images), now as cells.
- `gpu`: every method on both embedded data sets at a real budget (ResNet-18 width 1, CIFAR stem,
  batch 512, 5 epochs of the 60,000 images, bf16, the device pipeline), sized so that one data
  set's table fits in one quarter hour on one H100, compilation included.
- `cpu_long`: the Fashion-MNIST methods of `gpu` at 5 × `cpu600`'s steps on the 10,000-image
  subset, run at low priority on a CPU machine a few cells at a time (`nice`).
- `tiny`: two `:runlocal` steps per cell, the runner's own check (`tests/test_campaign.py`).
"""

from __future__ import annotations

import dataclasses
import os

TEXT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grid_text")


def prose(name: str) -> str:
    """The Markdown a grid or a section prints on the page: `grid_text/<name>.md` (`<grid>.md`,
    `<grid>.<section>.md`), kept out of the code; its links are relative to `results/`, the page's
    folder."""
    with open(os.path.join(TEXT_DIR, f"{name}.md"), encoding="utf-8") as f:
        return f.read()


@dataclasses.dataclass(frozen=True)
class Section:
    """One data set's table: `methods` = ((key, 'configs/X.py[:arg] key=value ...'), ...); the
    first method's encoder is the random-init row and its data the raw-pixel row. `own_random_init`
    = ((method, (methods read against it), ...): methods whose model differs from the first's
    (CMC's two encoders) get a random-init row of their own encoder, `random_init_<method>`."""

    key: str
    title: str
    text: str
    methods: tuple[tuple[str, str], ...]
    sets: tuple[str, ...] = ()
    own_random_init: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def random_init_row(self, method: str) -> str:
        """The random-init row `method` is read against."""
        for owner, readers in self.own_random_init:
            if method in readers:
                return f"random_init_{owner}"
        return "random_init"


@dataclasses.dataclass(frozen=True)
class Grid:
    """`sets`: the budget, applied to every cell's config before the section's and the method's
    own overrides; `features`: what the probe and the kNN read of every cell's encoder
    (`evals.probe_table.features`: 'pooled', the backbone's pooled last stage, the papers'
    protocol), set on every cell after all other overrides, which may not set it;
    `curve_points`: in-training kNN evaluations per run (the kNN curve), each on the first
    `curve_knn` = (train, test) images of the eval splits (-1: all); `more_seeds` = ((method,
    (seed, ...)), ...): seeds beyond `seeds` for the methods named, run after every other cell
    (a question that needs more seeds than the grid's, e.g. a small gap between two rows)."""

    name: str
    title: str
    text: str
    device: str  # what the grid is sized for, in words
    sets: tuple[str, ...]
    sections: tuple[Section, ...]
    seeds: tuple[int, ...] = (0, 1, 2)
    command: str = ""  # how the page says to advance it (default: the runner's plain command)
    features: str = "pooled"
    official: bool = False  # cells train the official code (`experiments/official/`), not ours
    baselines: bool = True  # random-init and raw-pixel cells (an official grid reads ours)
    curve_points: int = 4
    curve_knn: tuple[int, int] = (-1, -1)
    more_seeds: tuple[tuple[str, tuple[int, ...]], ...] = ()
    raw_pixels: bool = True  # the raw-pixel cell (with `baselines`)
    # (Detectron2 config file, its KEY VALUE overrides...): every train / random cell then exports
    # its encoder and fine-tunes Detectron2 from it (`experiments/detection.py`), after the probe
    detection: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Cell:
    """`kind`: 'train' (pretrain, then probe + kNN), 'random' (the section's first encoder at
    random init) or 'raw' (raw pixels, no seed)."""

    grid: str
    section: str
    method: str
    kind: str
    spec: str
    seed: int | None

    @property
    def name(self) -> str:
        return f"{self.section}.{self.method}" + ("" if self.seed is None else f".s{self.seed}")


def cells(grid: Grid) -> list[Cell]:
    """The grid's cells in run order: per section, the raw pixels, then seed by seed the
    random-init baselines (cheap, and what every row is read against) and every method, so that a
    partly run grid has every row at seed 0 first (within one process later seeds reuse the
    compiled step from the persistent cache)."""
    out = []
    for section in grid.sections:
        first_spec = section.methods[0][1]
        specs = dict(section.methods)
        if grid.baselines and grid.raw_pixels:
            out.append(Cell(grid.name, section.key, "raw_pixels", "raw", first_spec, None))
        for seed in grid.seeds:
            if grid.baselines:
                out.append(Cell(grid.name, section.key, "random_init", "random", first_spec, seed))
                for owner, _ in section.own_random_init:
                    name = f"random_init_{owner}"
                    out.append(Cell(grid.name, section.key, name, "random", specs[owner], seed))
            for method, spec in section.methods:
                out.append(Cell(grid.name, section.key, method, "train", spec, seed))
        for seed in sorted({s for _, seeds in grid.more_seeds for s in seeds}):
            for method, seeds in grid.more_seeds:
                if method in specs and seed in seeds:
                    out.append(Cell(grid.name, section.key, method, "train", specs[method], seed))
    return out


def section(grid: Grid, key: str) -> Section:
    return next(s for s in grid.sections if s.key == key)


# The paper orderings the results page states for each section that has both methods:
# (better, worse, where the paper reports it).
ORDERINGS = (
    ("scce", "ressl", "SCE Table 5"),
    ("ressl", "mocov2", "SCE Table 5"),
    ("jcl", "mocov2", "JCL Table 1"),
    ("interclr", "mocov2", "InterCLR Table 1"),
    ("iring", "ir", "Ring Table 1"),
    ("mocoring", "mocov2", "Ring Table 1"),
    ("cmcring", "cmc", "Ring Table 1"),
    ("infomin", "mocov2", "InfoMin Table 6"),
)

SUBSET = "data.train_subset=10000"
BANK = "method_config.bank_size=10000"

FASHION_TITLE = "Fashion-MNIST (28 px, grey)"
COLOUR_TITLE = "color_fashion_mnist (32 px, tinted items on photo backgrounds)"
# every method with a Fashion-MNIST config, as (cell name, config) at the config's own numbers
# (SCE's cells keep the key `scce` their recorded results have; its configs are `sce_*`)
FASHION_METHODS = tuple(
    (method, f"configs/{'sce' if method == 'scce' else method}_fashion_mnist.py")
    for method in ("mocov2", "scce", "ressl", "jcl", "ir", "interclr", "iring", "mocoring")
)

# ---- cpu600: the CPU tables of 2026-11-24 -------------------------------------------------------
# ResNet-18 (ImageNet stem), batch 64, 600 steps of SGD at lr 0.06 with cosine decay, on the first
# 10,000 training images (each seen ~4 times); the logistic probe (L-BFGS on standardised frozen
# pooled features, l2 chosen on a held-out tenth of train) and the weighted kNN (k 200, τ 0.07),
# both on all 60k / 10k images.
CPU600_BUDGET = (
    "model.stem=imagenet",
    "global_batch_size=64",
    "total_steps=600",
    "optim.lr_scaling=none",
    "optim.base_lr=0.06",
    "evals.probe_table.solver=lbfgs",
)

CPU600 = Grid(
    name="cpu600",
    title="600 steps on a 2-core CPU",
    text=prose("cpu600"),
    device="the 2-core CPU development machine",
    sets=CPU600_BUDGET,
    curve_points=4,
    curve_knn=(10_000, 2_000),
    sections=(
        Section(
            key="fashion_mnist",
            title=FASHION_TITLE,
            text=prose("cpu600.fashion_mnist"),
            sets=("model.width=0.5",),
            methods=(
                ("mocov2", f"configs/mocov2_fashion_mnist.py {SUBSET}"),
                ("scce", f"configs/sce_fashion_mnist.py {SUBSET}"),
                ("ressl", f"configs/ressl_fashion_mnist.py {SUBSET}"),
                ("jcl", f"configs/jcl_fashion_mnist.py {SUBSET}"),
                ("ir", f"configs/ir_fashion_mnist.py {SUBSET} {BANK}"),
                ("interclr", "configs/interclr_fashion_mnist.py:subset=10000"),
                ("iring", f"configs/iring_fashion_mnist.py {SUBSET} {BANK}"),
                ("mocoring", f"configs/mocoring_fashion_mnist.py {SUBSET}"),
            ),
        ),
        Section(
            key="color_fashion_mnist",
            title=COLOUR_TITLE,
            text=prose("cpu600.color_fashion_mnist"),
            methods=(
                ("mocov2", f"configs/mocov2_color_fashion_mnist.py {SUBSET}"),
                ("cmc", f"configs/cmc_color_fashion_mnist.py {SUBSET} {BANK}"),
                ("infomin", f"configs/infomin_color_fashion_mnist.py {SUBSET}"),
                ("cmcring", f"configs/cmcring_color_fashion_mnist.py {SUBSET} {BANK}"),
            ),
            own_random_init=(("cmc", ("cmc", "cmcring")),),
        ),
    ),
)

# ---- gpu: both data sets at a real budget, one data set per quarter hour on one H100 -------------
# 585 steps × 512 = 5 epochs of the 60,000 images. The estimate behind it (no H100 has run it yet):
# the MoCo v2 step of this model runs ~55k img/s on an H200 (docs/device_pipeline.md), so a run is
# ~6-10 s of steps plus ~30 s of compilation for a method's first seed (later seeds hit the
# persistent compilation cache) and a few seconds of probe and kNN: 8 methods × 3 seeds +
# baselines ≈ 8-11 minutes. The first measured cells set the runner's estimates.
GPU_BUDGET = (
    "data.pipeline=device",
    "model.dtype=bfloat16",
    "model.stem=cifar",
    "model.width=1.0",
    "global_batch_size=512",
    "total_steps=585",
    "optim.lr_scaling=linear",
    "optim.base_lr=0.06",
    "data.train_subset=0",
    "evals.probe_table.solver=lbfgs",
)

GPU = Grid(
    name="gpu",
    title="5 epochs on one GPU",
    text=prose("gpu"),
    device="one NVIDIA H100",
    command="bash experiments/campaign_device.sh run gpu 9   # on the lent machine",
    sets=GPU_BUDGET,
    curve_points=5,
    sections=(
        Section(
            key="fashion_mnist",
            title=FASHION_TITLE,
            text="Every method with a Fashion-MNIST config: its views, head, temperature, queue or bank.",
            methods=FASHION_METHODS,
        ),
        Section(
            key="color_fashion_mnist",
            title=COLOUR_TITLE,
            text=prose("gpu.color_fashion_mnist"),
            methods=(
                ("mocov2", "configs/mocov2_color_fashion_mnist.py"),
                ("scce", "configs/sce_color_fashion_mnist.py"),
                ("ressl", "configs/ressl_color_fashion_mnist.py"),
                ("jcl", "configs/jcl_color_fashion_mnist.py"),
                ("ir", "configs/ir_color_fashion_mnist.py"),
                ("interclr", "configs/interclr_color_fashion_mnist.py"),
                ("iring", "configs/iring_color_fashion_mnist.py"),
                ("mocoring", "configs/mocoring_color_fashion_mnist.py"),
                ("cmc", "configs/cmc_color_fashion_mnist.py"),
                ("infomin", "configs/infomin_color_fashion_mnist.py"),
                ("cmcring", "configs/cmcring_color_fashion_mnist.py"),
            ),
            own_random_init=(("cmc", ("cmc", "cmcring")),),
        ),
    ),
)

# ---- cpu_long: gpu's Fashion-MNIST methods at 5 × cpu600's steps on the 10k subset, on a CPU ----
CPU_LONG = Grid(
    name="cpu_long",
    title="3,000 steps on a 2-core CPU (background, low priority)",
    text=prose("cpu_long"),
    device="the 2-core CPU development machine",
    command="nice -n 19 python experiments/campaign.py --grid=cpu_long --minutes=60",
    sets=(*CPU600_BUDGET[:2], "total_steps=3000", *CPU600_BUDGET[3:], "model.width=0.5"),
    curve_points=5,
    curve_knn=(10_000, 2_000),
    sections=(dataclasses.replace(CPU600.sections[0], sets=()),),
)

# ---- cpu_speedrun: the least CPU time in which an encoder beats raw pixels (all 60k images) ------
# The previous default job's recipe (SCE, ResNet-18 width 1 with the ImageNet stem, batch 64,
# 2,400 steps of SGD at 0.06, cosine) on all 60,000 training images is the first row; each other
# row moves one
# or two levers from it (`+lever`: the stem, the width, the steps, the method). The stems on 28 px:
# ImageNet 28 → 7 px before stage 1 (1 px at the last stage), `stride2` (3×3/2 conv, no max-pool)
# → 14 px (2 px), CIFAR → 28 px (4 px); width 1/2 with `stride2` and 1/4 with the CIFAR stem
# keep roughly the ImageNet stem's convolution cost at width 1.
SPEEDRUN_BUDGET = (
    "model.stem=imagenet",
    "model.width=1.0",
    "global_batch_size=64",
    "total_steps=2400",
    "optim.lr_scaling=none",
    "optim.base_lr=0.06",
    "data.train_subset=0",
    "evals.probe_table.solver=lbfgs",
)
STRIDE2 = "model.stem=stride2 model.width=0.5"
CIFAR_STEM = "model.stem=cifar model.width=0.25"
SCCE = "configs/sce_fashion_mnist.py"

CPU_SPEEDRUN = Grid(
    name="cpu_speedrun",
    title="the CPU speedrun: recipes against CPU minutes on all 60,000 images",
    text=prose("cpu_speedrun"),
    device="the 2-core CPU development machine",
    command="nice -n 19 python experiments/campaign.py --grid=cpu_speedrun --minutes=60",
    sets=SPEEDRUN_BUDGET,
    seeds=(0, 1, 2),
    curve_points=4,
    curve_knn=(10_000, 2_000),
    sections=(
        Section(
            key="fashion_mnist",
            title=FASHION_TITLE,
            text="",
            methods=(
                ("scce", SCCE),
                ("scce+stride2", f"{SCCE} {STRIDE2}"),
                ("mocov2+stride2", f"configs/mocov2_fashion_mnist.py {STRIDE2}"),
                ("scce+cifar", f"{SCCE} {CIFAR_STEM}"),
                ("mocov2", "configs/mocov2_fashion_mnist.py"),
                # from the best so far (`+stride2`): crops of at least half the image (28 px
                # leaves little of an item in a 20 % crop), and twice the steps
                ("scce+stride2+crop0.5", f"{SCCE}:crop_min=0.5 {STRIDE2}"),
                ("scce+stride2+steps4800", f"{SCCE} {STRIDE2} total_steps=4800"),
                # the optimiser and the method's own numbers, one at a time from `+stride2`: twice
                # the lr, a faster target (m 0.98 for 0.99), a queue of 16,384 keys for 4,096
                ("scce+stride2+lr0.12", f"{SCCE} {STRIDE2} optim.base_lr=0.12"),
                ("scce+stride2+ema0.98", f"{SCCE} {STRIDE2} ema.base=0.98"),
                ("scce+stride2+queue16k", f"{SCCE} {STRIDE2} method_config.queue_size=16384"),
                # τ 0.2 for 0.1 (τ_m stays 0.05); both views crop + flip only (no brightness /
                # contrast jitter in the online view)
                ("scce+stride2+tau0.2", f"{SCCE} {STRIDE2} method_config.temperature=0.2"),
                ("scce+stride2+nojitter", f"{SCCE} {STRIDE2} data.views=('weak','weak')"),
            ),
            own_random_init=(
                (
                    "scce+stride2",
                    (
                        "scce+stride2",
                        "mocov2+stride2",
                        "scce+stride2+crop0.5",
                        "scce+stride2+steps4800",
                        "scce+stride2+lr0.12",
                        "scce+stride2+ema0.98",
                        "scce+stride2+queue16k",
                        "scce+stride2+tau0.2",
                        "scce+stride2+nojitter",
                    ),
                ),
                ("scce+cifar", ("scce+cifar",)),
            ),
        ),
    ),
)


# ---- cpu_speedrun_methods: every Fashion-MNIST method at cpu_speedrun's best recipe -------------
CPU_SPEEDRUN_METHODS = Grid(
    name="cpu_speedrun_methods",
    title="every Fashion-MNIST method at the CPU speedrun's best recipe",
    text=prose("cpu_speedrun_methods"),
    device="the 2-core CPU development machine",
    command="nice -n 19 python experiments/campaign.py --grid=cpu_speedrun_methods --minutes=60",
    sets=(*SPEEDRUN_BUDGET, *STRIDE2.split()),
    seeds=(0, 1, 2),
    curve_points=4,
    curve_knn=(10_000, 2_000),
    sections=(
        Section(
            key="fashion_mnist",
            title=FASHION_TITLE,
            text="",
            methods=FASHION_METHODS,
        ),
    ),
)


# The Ring code's own IR settings (config/pretrain/nce/*.json, src/objectives/memory.py): bank
# momentum 0 (rows replaced), k 4096 = 4,095 draws beside the positive, uniform bank init.
RING_CODE_IR = (
    "method_config.bank_momentum=0 method_config.num_negatives=4095 method_config.bank_init=uniform"
)

# The official MoCo code in one process: the keys' BN over the whole batch, no shuffle.
KEY_BN64 = "method_config.key_bn_group_size=0 method_config.shuffle_bn=False"

# ---- official_cpu_long: the official implementations at cpu_long's budget ---------------------
OFFICIAL_CPU_LONG = Grid(
    name="official_cpu_long",
    title="the official implementations at cpu_long's budget",
    text=prose("official_cpu_long"),
    device="the 2-core CPU development machine",
    command="nice -n 19 python experiments/campaign.py --grid=official_cpu_long --minutes=60",
    sets=CPU_LONG.sets,
    official=True,
    baselines=False,
    curve_points=0,
    # MoCoRing's probe gap on seeds 0-2 (official 83.46 ± 0.15, ours at its settings 82.99 ± 0.15)
    # read on six: 83.18 ± 0.36 against 83.14 ± 0.26 (2026-11-28), the draws
    more_seeds=(("mocoring", (3, 4, 5)), ("mocoring+ourviews", (3, 4, 5))),
    sections=(
        Section(
            key="fashion_mnist",
            title=FASHION_TITLE,
            text="",
            methods=(
                ("mocov2", f"configs/mocov2_fashion_mnist.py {SUBSET}"),
                ("jcl", f"configs/jcl_fashion_mnist.py {SUBSET}"),
                ("ir", f"configs/ir_fashion_mnist.py {SUBSET} {BANK}"),
                ("iring", f"configs/iring_fashion_mnist.py {SUBSET} {BANK}"),
                (
                    "iring+official",
                    f"configs/iring_fashion_mnist.py {SUBSET} {BANK} {RING_CODE_IR}",
                ),
                ("mocoring", f"configs/mocoring_fashion_mnist.py {SUBSET}"),
                ("mocoring+ourviews", f"configs/mocoring_fashion_mnist.py {SUBSET}"),
                ("scce", f"configs/sce_fashion_mnist.py {SUBSET}"),
                ("ressl", f"configs/ressl_fashion_mnist.py {SUBSET}"),
                ("interclr", "configs/interclr_fashion_mnist.py:subset=10000"),
                (
                    "interclr+offline",
                    "configs/interclr_fashion_mnist.py:subset=10000 method_config.labels=offline",
                ),
            ),
        ),
    ),
)


# ---- the colour twin: CMC and InfoMin, ours and official, at cpu_long's budget ------------------
# CMC's official schedule (train_CMC.py:50, util.py:7-13): lr × 0.1 after epochs 120, 160 and 200 of
# 240, i.e. after 1/2, 2/3 and 5/6 of the run: epochs 10, 13 and 17 of the ~19 here, per epoch.
CMC_STEP_LR = "optim.schedule=step optim.schedule_unit=epoch optim.decay_epochs=(10,13,17)"
# InfoMin's (PyContrast `--cosine`, base_trainer.py:66-79): cosine per epoch, epochs from 1, to
# lr·0.1³; its MLP head as wide as the feature (build_backbone.py); one process's key BN over the
# whole batch (contrast_trainer.py:157-200 on one GPU: the shuffle permutes one BN group).
INFOMIN_OFFICIAL = (
    f"model.projector.hidden_dims=(256,) {KEY_BN64} "
    "optim.schedule_unit=epoch optim.epoch_offset=1.0 optim.final_lr=6e-05"
)
COLOUR_TWIN_METHODS = (
    ("infomin", f"configs/infomin_color_fashion_mnist.py {SUBSET} {INFOMIN_OFFICIAL}"),
    ("cmc", f"configs/cmc_color_fashion_mnist.py {SUBSET} {BANK} {CMC_STEP_LR}"),
)
COLOUR_TWIN_TEXT = prose("colour_twin")
CPU_LONG_COLOR = Grid(
    name="cpu_long_color",
    title="CMC and InfoMin on color_fashion_mnist at cpu_long's budget (ours)",
    text=COLOUR_TWIN_TEXT,
    device="the 2-core CPU development machine",
    command="nice -n 19 python experiments/campaign.py --grid=cpu_long_color --minutes=60",
    sets=CPU_LONG.sets,
    curve_points=5,
    curve_knn=(10_000, 2_000),
    # CMC's kNN beside the official's three seeds read on five of ours (findings/cmc.md)
    more_seeds=(("cmc", (3, 4)),),
    sections=(
        Section(
            key="color_fashion_mnist",
            title=COLOUR_TITLE,
            text="",
            methods=COLOUR_TWIN_METHODS,
            own_random_init=(("cmc", ("cmc",)),),
        ),
    ),
)
OFFICIAL_CPU_LONG_COLOR = Grid(
    name="official_cpu_long_color",
    title="the official CMC and InfoMin on color_fashion_mnist at cpu_long's budget",
    text=COLOUR_TWIN_TEXT + "\n" + prose("official_cpu_long_color"),  # its own paragraph after
    device="the 2-core CPU development machine",
    command="nice -n 19 python experiments/campaign.py --grid=official_cpu_long_color --minutes=60",
    sets=CPU_LONG.sets,
    official=True,
    baselines=False,
    curve_points=0,
    sections=CPU_LONG_COLOR.sections,
)


# ---- cpu_long_variants: ours at cpu_long's budget with one number of the official run's --------
# Where the official MoCo v2 / MoCoRing (official_cpu_long) and ours differ, ours with the official
# runs' settings, one at a time and both: its keys' BN over the whole batch of 64 (one process) instead of two
# shuffled groups of 32, its lr stepped once per epoch (main_moco.py:372-381) instead of per step.
CPU_LONG_VARIANTS = Grid(
    name="cpu_long_variants",
    title="cpu_long's MoCo v2 and MoCoRing with the official runs' settings; IRing at the Ring code's; SCE with its own target init",
    text=prose("cpu_long_variants"),
    device="the 2-core CPU development machine",
    command="nice -n 19 python experiments/campaign.py --grid=cpu_long_variants --minutes=60",
    sets=CPU_LONG.sets,
    baselines=False,
    curve_points=5,
    curve_knn=(10_000, 2_000),
    more_seeds=(("mocoring+keybn64+epochlr", (3, 4, 5)),),  # beside official_cpu_long's
    sections=(
        Section(
            key="fashion_mnist",
            title=FASHION_TITLE,
            text="",
            methods=(
                (
                    "mocov2+keybn64",
                    f"configs/mocov2_fashion_mnist.py {SUBSET} {KEY_BN64}",
                ),
                (
                    "mocoring+keybn64",
                    f"configs/mocoring_fashion_mnist.py {SUBSET} {KEY_BN64}",
                ),
                (
                    "mocov2+epochlr",
                    f"configs/mocov2_fashion_mnist.py {SUBSET} optim.schedule_unit=epoch",
                ),
                (
                    "mocov2+keybn64+epochlr",
                    f"configs/mocov2_fashion_mnist.py {SUBSET} {KEY_BN64} optim.schedule_unit=epoch",
                ),
                (
                    "mocoring+keybn64+epochlr",
                    f"configs/mocoring_fashion_mnist.py {SUBSET} {KEY_BN64} optim.schedule_unit=epoch",
                ),
                (
                    "iring+official",
                    f"configs/iring_fashion_mnist.py {SUBSET} {BANK} {RING_CODE_IR}",
                ),
                (
                    "scce+independent",
                    f"configs/sce_fashion_mnist.py {SUBSET} ema.target_init=independent",
                ),
                (
                    "interclr+offline",
                    "configs/interclr_fashion_mnist.py:subset=10000 method_config.labels=offline",
                ),
                (
                    "interclr+keybn64+epochlr",
                    "configs/interclr_fashion_mnist.py:subset=10000 "
                    f"{KEY_BN64} optim.schedule_unit=epoch",
                ),
                (
                    "interclr+offline+keybn64+epochlr",
                    "configs/interclr_fashion_mnist.py:subset=10000 method_config.labels=offline "
                    f"{KEY_BN64} optim.schedule_unit=epoch",
                ),
            ),
        ),
    ),
)


# ---- color_speedrun: the colour study at the speedrun's recipe --------------------------------
# docs/experiments/color_fashion_mnist.md: at cpu600 MoCo v2 probes below its random init on
# color_fashion_mnist, matching its views on the tint and the background crop; the cue-free data
# set (whole photos as backgrounds, the tint tied to the photo) is the screen's closest one; item
# views (each training view composited anew from the item) take the shared cues out of the views.
COLOR_METHODS = (
    ("mocov2", "configs/mocov2_color_fashion_mnist.py"),
    ("scce", "configs/sce_color_fashion_mnist.py"),
)
CUE_FREE = "data.color_fashion_mnist.background_crop=1.0 data.color_fashion_mnist.tint=background"
COLOR_SPEEDRUN = Grid(
    name="color_speedrun",
    title="color_fashion_mnist at the CPU speedrun's recipe, with and without the cues",
    text=prose("color_speedrun"),
    device="the 2-core CPU development machine",
    command="nice -n 19 python experiments/campaign.py --grid=color_speedrun --minutes=60",
    sets=CPU_SPEEDRUN_METHODS.sets,  # the same recipe
    curve_points=4,
    curve_knn=(10_000, 2_000),
    sections=(
        Section(
            key="color_fashion_mnist",
            title="color_fashion_mnist (as generated: own photo crop and tint per item)",
            text="",
            methods=COLOR_METHODS,
        ),
        Section(
            key="color_fashion_mnist_cue_free",
            title="color_fashion_mnist without the cues (whole photos, tint tied to the photo)",
            text="",
            methods=COLOR_METHODS,
            sets=tuple(CUE_FREE.split()),
        ),
        Section(
            key="color_fashion_mnist_item_views",
            title="color_fashion_mnist with item views (each view its own photo crop and tint)",
            text=prose("color_speedrun.color_fashion_mnist_item_views"),
            methods=(
                *COLOR_METHODS,
                (
                    "mocov2+keybn64+epochlr",
                    f"configs/mocov2_color_fashion_mnist.py {KEY_BN64} optim.schedule_unit=epoch",
                ),
                (
                    "mocov2+tau0.1",
                    "configs/mocov2_color_fashion_mnist.py method_config.temperature=0.1",
                ),
                # SCE with λ = 1: its one-hot InfoNCE alone (no relational target), its views, head
                ("scce+coeff1", "configs/sce_color_fashion_mnist.py method_config.coeff=1.0"),
                # and which of SCE's other parts MoCo v2 lacks: both views strong (as MoCo v2's),
                # or MoCo v2's head (512 wide, no BN)
                (
                    "scce+coeff1+strongkey",
                    "configs/sce_color_fashion_mnist.py method_config.coeff=1.0 "
                    "data.views=('strong','strong')",
                ),
                (
                    "scce+coeff1+mocohead",
                    "configs/sce_color_fashion_mnist.py method_config.coeff=1.0 "
                    "model.projector.use_bn=False model.projector.hidden_bias=True "
                    "model.projector.hidden_dims=(512,)",
                ),
            ),
            sets=("data.color_fashion_mnist.views=item",),
        ),
    ),
)


def method_key(method: str) -> str:
    """The method of a row: 'scce+stride2' (a recipe's levers after '+') → 'scce'."""
    return method.partition("+")[0]


# ---- tiny: the runner's own check --------------------------------------------------------------
TINY = Grid(
    name="tiny",
    title="two :runlocal steps (the runner's check)",
    text=prose("tiny"),
    device="any",
    sets=(
        "data.pipeline=device",
        "total_steps=2",
        "evals.probe_table.num_train=256",
        "evals.probe_table.iterations=5",
    ),
    seeds=(0,),
    curve_points=2,
    curve_knn=(128, 64),
    sections=(
        Section(
            key="fashion_mnist",
            title=FASHION_TITLE,
            text="MoCo v2 at `:runlocal`.",
            methods=(("mocov2", "configs/mocov2_fashion_mnist.py:runlocal"),),
        ),
    ),
)

# ---- detection_cpu: the CPU detection-transfer study ----------------------------------------------
# Encoders Detectron2 builds (ResNet-18, ImageNet stem, width 1, one grey channel) pretrained at a
# CPU budget like cpu600's (batch 64, SGD lr 0.06 cosine, 800 steps on all 60,000 images), then a
# Faster R-CNN R18-FPN fine-tuned from each on `fashion_mnist_det` (one CPU core, 800 iterations of
# 4 canvases, AP on the 300 test canvases every 200). The probe and kNN (10,000 training images)
# read the same encoders, for context.
DETECTION_CPU_BUDGET = (
    "model.stem=imagenet",
    "model.width=1",
    "global_batch_size=64",
    "total_steps=800",
    "optim.lr_scaling=none",
    "optim.base_lr=0.06",
    "optim.warmup_epochs=0",
    "evals.probe_table.solver=lbfgs",
    "evals.probe_table.num_train=10000",
)
DETECTION_CPU_FINETUNE = (
    "configs/detectron2/fashion_mnist_det_R18_FPN.yaml",
    *("SOLVER.IMS_PER_BATCH", "4", "SOLVER.MAX_ITER", "800", "SOLVER.STEPS", "(600,750)"),
    *("SOLVER.CHECKPOINT_PERIOD", "200", "TEST.EVAL_PERIOD", "200"),
)

DETECTION_CPU = Grid(
    name="detection_cpu",
    title="detection transfer on one CPU core",
    text=prose("detection_cpu"),
    device="the 2-core CPU development machine, one core per cell (taskset, nice)",
    sets=DETECTION_CPU_BUDGET,
    curve_points=0,
    raw_pixels=False,
    detection=DETECTION_CPU_FINETUNE,
    sections=(
        Section(
            key="fashion_mnist_det",
            title="fashion_mnist_det (Fashion-MNIST items on 128-px grey canvases)",
            text=prose("detection_cpu.fashion_mnist_det"),
            methods=(
                ("scce", "configs/sce_fashion_mnist.py"),
                ("mocov2", "configs/mocov2_fashion_mnist.py"),
                ("supervised", "configs/supervised_fashion_mnist.py"),
            ),
        ),
    ),
)

GRIDS = {
    g.name: g
    for g in (
        DETECTION_CPU,
        GPU,
        CPU_LONG,
        CPU600,
        CPU_SPEEDRUN,
        CPU_SPEEDRUN_METHODS,
        OFFICIAL_CPU_LONG,
        CPU_LONG_VARIANTS,
        CPU_LONG_COLOR,
        OFFICIAL_CPU_LONG_COLOR,
        COLOR_SPEEDRUN,
        TINY,
    )
}
# the grids on the results page, in its order
PAGE_GRIDS = (
    "gpu",
    "cpu_long",
    "official_cpu_long",
    "cpu_long_variants",
    "cpu_long_color",
    "official_cpu_long_color",
    "cpu600",
    "cpu_speedrun",
    "cpu_speedrun_methods",
    "color_speedrun",
)
