"""InfoMin's view studies ("What Makes for Good Views for Contrastive Learning?", Tian et al. 2020)
on color_fashion_mnist: each writes `WORKDIR/table.md` (mean ± sample std over the seeds, then every
seed), `WORKDIR/<study>.png` and `WORKDIR/results.json`. Sizes and swept values are
`configs/views/studies.py` (`:size=small` for 2 CPU cores, the default full size for a GPU).

Table 5 (Sec. 4.2): for base ∈ {RGB, YDbDr} × views ∈ {raw, unsupervised, supervised, semi} × seeds,
learn g (`ssl_jax.view_learning`; `raw`: no learning, g = the identity, so CMC runs on the base
space's own 1 | 2 split, R | GB or Y | DbDr, the paper's "contrastive learning over the original
color space"), CMC on g's views (`configs/cmc_color_fashion_mnist.py:flow=...`), probe + kNN, the
held-out I_NCE of g's views; the paper's STL-10 numbers beside, a random-init row, a bar plot:

    python experiments/view_studies.py table5 --config=configs/views/studies.py:size=small \\
        --workdir=runs/views/table5_small
    python experiments/view_studies.py table5 --config=configs/views/studies.py --workdir=runs/views/table5

Colour-space splits (Sec. 3.3 ex. 2, Fig. 4): CMC on L | ab, Y | CbCr, Y | DbDr, R | GB; held-out I_NCE
against probe accuracy:

    python experiments/view_studies.py splits --config=configs/views/studies.py:size=small \\
        --workdir=runs/views/splits_small
    python experiments/view_studies.py splits --config=configs/views/studies.py --workdir=runs/views/splits

Reverse U (appendix C.2, Fig. 13 / 14): MoCo v2 with the RRC lower bound c, then the colour-jitter
strength x, swept; I_NCE against probe accuracy:

    python experiments/view_studies.py reverse_u --config=configs/views/studies.py:size=small \\
        --workdir=runs/views/reverse_u_small
    python experiments/view_studies.py reverse_u --config=configs/views/studies.py \\
        --workdir=runs/views/reverse_u

Patch offsets (Sec. 3.3 ex. 1, Fig. 3): a critic trained on 32-px patch pairs at offset (d, d) from
the photos that scikit-image ships (`color_fashion_mnist.PHOTOS`; two held out for I_NCE), its
embeddings probed on color_fashion_mnist:

    python experiments/view_studies.py patches --config=configs/views/studies.py:size=small \\
        --workdir=runs/views/patches_small
    python experiments/view_studies.py patches --config=configs/views/studies.py \\
        --workdir=runs/views/patches

Task dependence (Sec. 4.1, Table 4) on a toy rebuilt from Fashion-MNIST items on scikit-image's
photos: v1, v2 share the item, its position, the background or several; item, background and
position read from f1's embeddings:

    python experiments/view_studies.py task_dependence --config=configs/views/studies.py:size=small \\
        --workdir=runs/views/task_dependence_small
    python experiments/view_studies.py task_dependence --config=configs/views/studies.py \\
        --workdir=runs/views/task_dependence

Options: `--seeds=0,1,2` (default: the config's), `--set=KEY=VALUE` (repeatable) for every
view-learning and pretraining config (e.g. `data.data_dir=...`). Every run is cached in its folder
(g's `flow.npz`, the pretraining checkpoints and `compare.json` of `compare_methods.run_one`, the
I_NCE in `i_nce.json`), so an interrupted study re-run skips what is done.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from experiments import compare_methods  # noqa: E402
from ssl_jax import configs  # noqa: E402

STUDIES = ("table5", "splits", "reverse_u", "patches", "task_dependence")
FACTORS = ("background", "item", "position")
VIEW_NAMES = {"rgb": "R|GB"}  # the identity g's split of RGB; colour spaces: color.SPACES


def _path(path: str) -> str:
    return path if os.path.isabs(path) else os.path.join(ROOT, path)


def split_name(space: str) -> str:
    """'L|ab', 'Y|DbDr', 'R|GB': the 1- and 2-channel views of `space`."""
    from ssl_jax.data import color

    if space in VIEW_NAMES:
        return VIEW_NAMES[space]
    names = color.SPACES[space].channels
    return f"{names[0]}|{''.join(names[1:])}"


# --------------------------------------------------------------------------------------------------
# One run: (g), pretraining, probe + kNN, held-out I_NCE


def learn_g(study, sets, base: str, mode: str, seed: int, folder: str) -> str:
    """g's `flow.npz` in `folder` (learned by `view_learning` unless already there)."""
    from ssl_jax import view_learning

    path = os.path.join(folder, "flow.npz")
    if not os.path.isfile(path):
        spec = f"{_path(study.view_config)}:mode={mode},base={base}"
        config = compare_methods.load_config(spec, [*study.view_sets, *sets], seed)
        print(f"== view learning {mode} from {base}, seed {seed}", flush=True)
        view_learning.learn_views(config, folder)
    return path


def view_pairs(config, split: str, critic, seed: int):
    """Endless `(v1, v2)` batches of `critic.batch` images of `split`, as `config` pretrains on
    them: its recipes and model input; one view (CMC) is split 1 | 2 as its model splits it."""
    import jax
    import jax.numpy as jnp

    from ssl_jax.data import pipeline, train_input
    from ssl_jax.data.device import canvas
    from ssl_jax.models import compute_dtype

    c = type(config)(config.to_dict())
    c.data.train_split = split
    c.data.train_subset = critic.train_subset if split == config.data.train_split else 0
    c.data.shuffle_buffer = max(critic.batch, critic.train_subset or config.data.shuffle_buffer)
    c.global_batch_size = critic.batch
    c.seed = seed
    rng, dtype = jax.random.PRNGKey(seed), compute_dtype(c.model.dtype)  # as the step makes them
    for i, batch in enumerate(pipeline.train_iterator(c)):
        raw = canvas.batch_views(c.data, batch)
        views = [
            jnp.asarray(v, jnp.float32)
            for v in train_input.prepare_views(c, raw, jax.random.fold_in(rng, i), dtype)
        ]
        yield (views[0][..., :1], views[0][..., 1:]) if len(views) == 1 else (views[0], views[1])


CACHED_KEYS = ("i_nce", "i_nce_train")  # what every cell's cache holds today


def load_cache(path: str) -> dict | None:
    """A cell's cached JSON, or None when absent or written by an older version without all of
    `CACHED_KEYS` (then the cell is recomputed, and says so)."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        result = json.load(f)
    missing = [k for k in CACHED_KEYS if k not in result]
    if missing:
        print(f"{path}: an older cache without {missing}: recomputing", flush=True)
        return None
    return result


def i_nce(config, critic, seed: int, folder: str) -> dict:
    """The held-out I_NCE of `config`'s views (`view_learning.estimate_i_nce`), cached in
    `folder/i_nce.json`."""
    from ssl_jax import view_learning

    cached = os.path.join(folder, "i_nce.json")
    if (result := load_cache(cached)) is not None:
        return result
    result = view_learning.estimate_i_nce(
        view_pairs(config, config.data.train_split, critic, seed),
        view_pairs(config, config.data.eval_test_split, critic, seed + 1),
        steps=critic.steps,
        eval_batches=critic.eval_batches,
        lr=critic.lr,
        temperature=critic.temperature,
        seed=seed,
    )
    os.makedirs(folder, exist_ok=True)
    with open(cached, "w") as f:
        json.dump(result, f)
    return result


def run_cell(config, study, seed: int, folder: str, with_random: bool = False) -> dict:
    """Pretrain (or resume), probe + kNN (`compare_methods.run_one`) and I_NCE of one config;
    `with_random`: also its encoders at random init (`'random'`: probe, kNN)."""
    result = compare_methods.run_one(config, os.path.join(folder, "pretrain"), with_random)
    return {
        "probe": result["pretrained"]["probe"],
        "knn": result["pretrained"]["knn"],
        "pretrain_s": result["pretrain_s"],
        **i_nce(config, study.critic, seed, folder),
        **({"random": result["random"]} if with_random else {}),
    }


def cmc_config(study, sets, seed: int, arg: str):
    spec = f"{_path(study.cmc_config)}:{arg}"
    return compare_methods.load_config(spec, [*study.pretrain_sets, *study.cmc_sets, *sets], seed)


# --------------------------------------------------------------------------------------------------
# Tables and plots


def _nats(values) -> str:
    return "{:.2f} ± {:.2f}".format(*compare_methods.mean_std(values))


def _cell(text: str) -> str:
    """`text` in a Markdown table cell (its '|' escaped)."""
    return text.replace("|", r"\|")


def rows_table(rows: dict, extra_header: str = "", extra=None) -> list[str]:
    """Markdown: one row per name, `rows[name]` = the seeds' results."""
    head = (
        "| views | linear probe top-1 (%) | kNN top-1 (%) | I_NCE held-out (nats) "
        "| I_NCE train (nats) |"
    )
    lines = [head + (f" {extra_header} |" if extra else ""), "|---" * (5 + bool(extra)) + "|"]
    for name, results in rows.items():
        lines.append(
            f"| {_cell(name)} | {compare_methods.summary([r['probe'] for r in results])} "
            f"| {compare_methods.summary([r['knn'] for r in results])} "
            f"| {_nats([r['i_nce'] for r in results])} "
            f"| {_nats([r['i_nce_train'] for r in results])} |"
            + (f" {extra(name)} |" if extra else "")
        )
    return lines


def _figure(panels: int):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 4.0), squeeze=False)
    return plt, fig, axes[0]


def plot_table5(rows: dict, study, out: str, random: float | None = None) -> str:
    """Bars: our probe accuracy (mean ± std over seeds, our held-out I_NCE written above) beside
    the paper's STL-10 number, per view generator, one panel per base space; `random`: the random
    init's probe accuracy (%), a dashed line."""
    plt, fig, axes = _figure(len(study.table5.bases))
    views = list(study.table5.views)
    x = np.arange(len(views))
    for ax, base in zip(axes, study.table5.bases):
        ours = [compare_methods.mean_std([r["probe"] for r in rows[(base, v)]], 100) for v in views]
        paper = [study.paper_table5[base][v] for v in views]
        ax.bar(x - 0.2, [m for m, _ in ours], 0.4, yerr=[s for _, s in ours], label="ours (probe)")
        ax.bar(
            x + 0.2, [m for m, _ in paper], 0.4, yerr=[s for _, s in paper], label="paper STL-10"
        )
        for i, v in enumerate(views):
            nats = np.mean([r["i_nce"] for r in rows[(base, v)]])
            top = ours[i][0] + ours[i][1]
            ax.annotate(f"{nats:.2f}", (i - 0.2, top), ha="center", va="bottom", fontsize=7)
        if random is not None:
            ax.axhline(random, color="k", ls="--", lw=1, label="random init (ours)")
        ax.set_xticks(x, views)
        ax.set_ylabel("linear probe top-1 (%); above ours: I_NCE (nats)")
        ax.set_title(f"views learned from {base.upper()}")
        lo = min(m - s for m, s in ours + [tuple(p) for p in paper] + [(random or 100, 0)])
        ax.set_ylim(max(0.0, lo - 5), 110)  # the legend's row above the bars
        ax.legend(fontsize=7, loc="upper center", ncol=3)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def plot_i_nce(groups: dict, out: str, title: str, keys=None) -> str:
    """I_NCE (x) against probe accuracy (y), mean ± std over seeds; one panel per group
    {panel title: {point label: results}}, points joined in their order; `keys`: per panel,
    'i_nce' (held-out, the default) or 'i_nce_train'."""
    plt, fig, axes = _figure(len(groups))
    keys = keys or ["i_nce"] * len(groups)
    for ax, (name, points), key in zip(axes, groups.items(), keys):
        xs = [compare_methods.mean_std([r[key] for r in res]) for res in points.values()]
        ys = [compare_methods.mean_std([r["probe"] for r in res], 100) for res in points.values()]
        ax.errorbar(
            [m for m, _ in xs], [m for m, _ in ys], xerr=[s for _, s in xs],
            yerr=[s for _, s in ys], marker="o", capsize=3,
        )  # fmt: skip
        for label, (xm, _), (ym, _) in zip(points, xs, ys):
            ax.annotate(str(label), (xm, ym), textcoords="offset points", xytext=(4, 4), fontsize=8)
        scored = "held-out critic" if key == "i_nce" else "critic's last training batch"
        ax.set_xlabel(f"I_NCE(v1; v2), {scored} (nats)")
        ax.set_ylabel("linear probe top-1 (%)")
        ax.set_title(name)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def _write(workdir: str, header: list[str], lines: list[str], results: dict) -> str:
    table = "\n".join([*header, "", *lines]) + "\n"
    print(table, flush=True)
    with open(os.path.join(workdir, "table.md"), "w") as f:
        f.write(table)
    with open(os.path.join(workdir, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    return table


def _header(study, seeds, text: str, k: int = 0, data: str = "color_fashion_mnist") -> list[str]:
    k = k or study.critic.batch
    return [
        f"{text} {data}, size {study.size}, seeds {','.join(map(str, seeds))}: mean ± "
        "sample std over the seeds (every seed in brackets); probe: logistic, on the frozen "
        "encoders' features; I_NCE = log K − InfoNCE loss of a critic trained on training images and "
        f"scored on test images (K = {k}: at most log K = {np.log(k):.2f} nats); I_NCE train: the "
        "same on the critic's last training batch."
    ]


# --------------------------------------------------------------------------------------------------
# The studies


def table5(study, seeds, sets, workdir: str) -> str:
    rows = {}
    for seed in seeds:
        for base in study.table5.bases:
            for view in study.table5.views:
                folder = os.path.join(workdir, f"{base}_{view}_s{seed}")
                flow = learn_g(study, sets, base, view, seed, os.path.join(folder, "g"))
                config = cmc_config(study, sets, seed, f"flow={flow}")
                print(f"== CMC on {view} views from {base}, seed {seed}", flush=True)
                first = not rows or (base, view) == next(iter(rows))
                cell = run_cell(config, study, seed, folder, with_random=first)
                rows.setdefault((base, view), []).append(cell)

    def label(base, view):
        return f"{base.upper()}: {f'raw ({split_name(base)})' if view == 'raw' else f'g {view}'}"

    named = {label(*key): results for key, results in rows.items()}
    paper = {label(*key): study.paper_table5[key[0]][key[1]] for key in rows}
    lines = rows_table(named, "paper STL-10 (%)", lambda n: "{:.1f} ± {:.1f}".format(*paper[n]))
    base, view = next(iter(rows))
    randoms = [r["random"] for r in rows[(base, view)]]
    lines.append(
        f"| random init (CMC's encoders on {_cell(label(base, view))}) "
        f"| {compare_methods.summary([r['probe'] for r in randoms])} "
        f"| {compare_methods.summary([r['knn'] for r in randoms])} | – | – | – |"
    )
    random = compare_methods.mean_std([r["probe"] for r in randoms], 100)[0]
    plot_table5(rows, study, os.path.join(workdir, "table5.png"), random)
    header = _header(study, seeds, "Table 5 (learned views → CMC → probe) on")
    results = {f"{b}/{v}": r for (b, v), r in rows.items()}
    return _write(workdir, header, lines, results)


def splits(study, seeds, sets, workdir: str) -> str:
    rows = {}
    for seed in seeds:
        for space in study.splits:
            folder = os.path.join(workdir, f"{space}_s{seed}")
            if space == "rgb":  # R | GB: the identity g from RGB
                flow = learn_g(study, sets, "rgb", "raw", seed, os.path.join(folder, "g"))
                config = cmc_config(study, sets, seed, f"flow={flow}")
            else:
                config = cmc_config(study, sets, seed, f"space={space}")
            print(f"== CMC on {split_name(space)}, seed {seed}", flush=True)
            rows.setdefault(split_name(space), []).append(run_cell(config, study, seed, folder))
    plot_i_nce({"colour-space splits (CMC)": rows}, os.path.join(workdir, "splits.png"), "")
    header = _header(study, seeds, "Colour-space splits (CMC, Fig. 4) on")
    return _write(workdir, header, rows_table(rows), rows)


def with_op(recipe, name: str, **changes) -> tuple:
    """`recipe` (op dicts) with `changes` to its `name` op, which must be there."""
    ops = [dict(op) for op in recipe]
    hits = [op for op in ops if op["op"] == name]
    if not hits:
        raise ValueError(f"the recipe has no {name!r} op: {[op['op'] for op in ops]}")
    for op in hits:
        op.update(changes)
    return tuple(ops)


def sweep_config(study, sets, seed: int, knob: str, value: float):
    """`reverse_u.config` with every view's RRC lower bound (`knob='crop_low'`) or colour-jitter
    strength x (`'jitter'`: (0.8x, 0.8x, 0.8x, 0.2x)) set to `value`."""
    ru = study.reverse_u
    config = compare_methods.load_config(
        _path(ru.config), [*study.pretrain_sets, *ru.sets, *sets], seed
    )
    for name in set(config.data.views):
        recipe = config.data.recipes[name]
        if knob == "crop_low":
            recipe = with_op(recipe, "random_resized_crop", scale=(value, 1.0))
        else:
            strength = 0.8 * value
            recipe = with_op(
                recipe, "color_jitter", brightness=strength, contrast=strength,
                saturation=strength, hue=0.2 * value,
            )  # fmt: skip
        config.data.recipes[name] = recipe
    return config


def reverse_u(study, seeds, sets, workdir: str) -> str:
    groups = {"crop_low": {}, "jitter": {}}
    for seed in seeds:
        for knob in groups:
            for value in study.reverse_u[knob]:
                folder = os.path.join(workdir, f"{knob}{value}_s{seed}")
                config = sweep_config(study, sets, seed, knob, value)
                print(f"== MoCo v2, {knob} = {value}, seed {seed}", flush=True)
                groups[knob].setdefault(value, []).append(run_cell(config, study, seed, folder))
    titles = {"crop_low": "RRC lower bound c", "jitter": "colour-jitter strength x"}
    plot_i_nce(
        {titles[k]: v for k, v in groups.items()},
        os.path.join(workdir, "reverse_u.png"),
        "MoCo v2 on color_fashion_mnist",
    )
    rows = {f"{k} = {value}": res for k, g in groups.items() for value, res in g.items()}
    header = _header(study, seeds, "Reverse U (MoCo v2, Fig. 13 / 14) on")
    return _write(workdir, header, rows_table(rows), rows)


def patch_pairs(photos: np.ndarray, patch: int, offset: int, batch: int, mean, std, seed: int):
    """Endless `(v1, v2)` batches: `patch`-px squares of `photos` `[P, S, S, 3]` ([0, 1]) at (y, x)
    and (y + offset, x + offset), photo and (y, x) uniform, standardised with `mean` / `std`."""
    import jax.numpy as jnp

    rng = np.random.default_rng(seed)
    count, side = photos.shape[:2]
    if patch + offset > side:
        raise ValueError(f"patch {patch} + offset {offset} exceeds the photos' side {side}")
    span = np.arange(patch)
    mean, std = np.asarray(mean, np.float32), np.asarray(std, np.float32)
    while True:
        which = rng.integers(0, count, batch)[:, None, None]
        y, x = (rng.integers(0, side - patch - offset + 1, (batch, 1)) for _ in range(2))
        cut = [
            photos[which, (y + d + span)[:, :, None], (x + d + span)[:, None, :]]
            for d in (0, offset)
        ]
        yield tuple(jnp.asarray((c - mean) / std) for c in cut)


def embed(critic, params, images: np.ndarray, both: bool = True, batch: int = 512) -> np.ndarray:
    """The critic as an encoder: f1(x) ⊕ f2(x) (`both`) or f1(x) of standardised images
    `[N, H, W, 3]`."""
    import jax

    def features(x):
        z1, z2 = critic.apply(params, x, x)
        return jax.numpy.concatenate([z1, z2], -1) if both else z1

    apply = jax.jit(features)
    return np.concatenate(
        [np.asarray(apply(images[i : i + batch])) for i in range(0, len(images), batch)]
    )


def critic_cell(folder: str, study, seed: int, steps: int, pairs, score) -> dict:
    """One run of a study whose encoder is the critic itself, cached in `folder/cell.json`: the
    held-out I_NCE of a critic trained `steps` batches (`pairs()` → the train and test pair
    iterators), its training time and `score(critic, params)` (a dict: the probes)."""
    from ssl_jax import view_learning

    cached = os.path.join(folder, "cell.json")
    if load_cache(cached) is None:
        start = time.time()
        result = view_learning.estimate_i_nce(
            *pairs(),
            steps=steps,
            eval_batches=study.critic.eval_batches,
            lr=study.critic.lr,
            temperature=study.critic.temperature,
            seed=seed,
            return_params=True,
        )
        critic, params = result.pop("critic")
        result["pretrain_s"] = time.time() - start
        result.update(score(critic, params))
        os.makedirs(folder, exist_ok=True)
        with open(cached, "w") as f:
            json.dump(result, f)
    with open(cached) as f:
        return json.load(f)


def patches(study, seeds, sets, workdir: str) -> str:
    """Ex. 1: contrastive learning on patch pairs at offset d; I_NCE on the held-out photos' pairs,
    probe + kNN of the critic's embeddings of color_fashion_mnist (the data, probe and sizes of
    `cmc_config`)."""
    from ssl_jax.data.sources import color_fashion_mnist
    from ssl_jax.evaluate.evaluators import probe_and_knn, probe_args, raw_pixels

    pc = study.patches
    data = cmc_config(study, sets, 0, "")
    pt = data.evals.probe_table
    size, mean, std = data.data.image_size, data.data.mean, data.data.std
    images = {}
    for split, limit in (
        (data.data.eval_train_split, pt.num_train),
        (data.data.eval_test_split, -1),
    ):
        x, y = raw_pixels(data, split, limit, pt.batch_size)
        x = (x.reshape(-1, size, size, 3) - np.asarray(mean)) / np.asarray(std)
        images[split] = (x.astype(np.float32), y)
    photos = {
        part: color_fashion_mnist.photo_bank(tuple(pc[part]), pc.photo_side)
        for part in ("train_photos", "held_out_photos")
    }
    rows = {}
    for seed in seeds:
        for d in pc.offsets:
            print(f"== patches at offset {d}, seed {seed}", flush=True)

            def score(critic, params):
                tr, te = (
                    (embed(critic, params, x), y)
                    for x, y in (
                        images[data.data.eval_train_split],
                        images[data.data.eval_test_split],
                    )
                )
                scores = probe_and_knn(
                    tr, te, **probe_args(pt), knn_k=pt.knn_k, knn_temperature=pt.knn_temperature
                )
                return {"probe": scores["top1"], "knn": scores.get("knn_top1")}

            pairs = lambda d=d, seed=seed: tuple(  # noqa: E731
                patch_pairs(photos[part], pc.patch, d, pc.batch, mean, std, seed + i)
                for i, part in enumerate(photos)
            )
            folder = os.path.join(workdir, f"d{d}_s{seed}")
            cell = critic_cell(folder, study, seed, pc.steps, pairs, score)
            rows.setdefault(f"d = {d}", []).append(cell)
    plot_i_nce(  # held out on other photos, and on the training photos' own pairs
        {
            f"{pc.patch}-px pairs at offset (d, d), held-out photos": rows,
            f"{pc.patch}-px pairs at offset (d, d), training photos": rows,
        },
        os.path.join(workdir, "patches.png"),
        "the critic as encoder, probed on color_fashion_mnist",
        keys=["i_nce", "i_nce_train"],
    )
    header = _header(study, seeds, "Patch offsets (ex. 1, Fig. 3), probed on", pc.batch)
    header.append(
        f"Photos (scikit-image's own, centre squares at {pc.photo_side} px): the critic (the "
        f"encoder) trained {pc.steps} steps on pairs from {', '.join(pc.train_photos)}; its test "
        f"pairs for I_NCE come from {', '.join(pc.held_out_photos)}; the probe reads its "
        "embeddings f1(x) ⊕ f2(x)."
    )
    return _write(workdir, header, rows_table(rows), rows)


class Scenes:
    """Table 4's toy rebuilt: a Fashion-MNIST item (`items` uint8 `[N, 28, 28, 1]`, `labels`)
    pasted white by its alpha at (top, left) on a `canvas`-px crop of `photos` `[P, S, S, 3]`."""

    def __init__(self, items, labels, photos, canvas: int, seed: int):
        self.items, self.labels, self.photos, self.canvas = items, labels, photos, canvas
        self.rng = np.random.default_rng(seed)

    def factors(self, n: int) -> dict:
        """`n` uniform draws: item index, photo (the background class) and its crop, position."""
        side, c, item = self.photos.shape[1], self.canvas, self.items.shape[1]
        draw = self.rng.integers
        return dict(
            item=draw(0, len(self.items), n),
            background=np.stack([draw(0, len(self.photos), n), *draw(0, side - c + 1, (2, n))], 1),
            position=draw(0, c - item + 1, (n, 2)),
        )

    def render(self, f: dict) -> np.ndarray:
        """float32 `[n, canvas, canvas, 3]` in [0, 1]."""
        c, span = self.canvas, np.arange(self.canvas)
        (p, by, bx), (top, left) = f["background"].T, f["position"].T
        image = self.photos[
            p[:, None, None], (by[:, None] + span)[:, :, None], (bx[:, None] + span)[:, None, :]
        ]
        alpha = np.zeros((len(p), c, c, 1), np.float32)
        inner = np.arange(self.items.shape[1])
        alpha[
            np.arange(len(p))[:, None, None],
            (top[:, None] + inner)[:, :, None],
            (left[:, None] + inner)[:, None, :],
        ] = self.items[f["item"]].astype(np.float32) / 255.0
        return alpha + (1 - alpha) * image

    def pairs(self, shared, batch: int, mean, std):
        """Endless `(v1, v2)`: v2 shares the `shared` factors with v1, the others drawn anew."""
        import jax.numpy as jnp

        mean, std = np.asarray(mean, np.float32), np.asarray(std, np.float32)
        while True:
            f1, fresh = self.factors(batch), self.factors(batch)
            f2 = {k: f1[k] if k in shared else fresh[k] for k in FACTORS}
            yield tuple(jnp.asarray((self.render(f) - mean) / std) for f in (f1, f2))

    def tasks(self, n: int, mean, std):
        """`n` scenes (standardised) and their targets: item class, background class, position."""
        f = self.factors(n)
        x = (self.render(f) - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
        return x, self.labels[f["item"]], f["background"][:, 0], f["position"].astype(np.float32)


def ridge_error(train_x, train_y, test_x, test_y, l2: float) -> float:
    """Mean Euclidean error of a ridge regression (`probe_fit.ridge_fitter`, l2 per row) of
    `train_y` on features standardised with the training statistics."""
    from ssl_jax.evaluate.probe_fit import ridge_fitter, standardisation

    mu, sd = standardisation(train_x)
    head = ridge_fitter((train_x - mu) / sd, train_y)(np.arange(len(train_x)), l2)
    pred = ((test_x - mu) / sd) @ head["w"] + head["b"]
    return float(np.mean(np.linalg.norm(pred - test_y, axis=1)))


def task_dependence(study, seeds, sets, workdir: str) -> str:
    """Table 4: which factors v1 and v2 share decides what the encoder f1 (the critic's) keeps."""
    from ssl_jax.data import datasets
    from ssl_jax.data.sources import color_fashion_mnist, fashion_mnist
    from ssl_jax.evaluate.evaluators import probe_and_knn, probe_args

    td = study.task_dependence
    data = cmc_config(study, sets, 0, "")
    pt = data.evals.probe_table
    mean, std = data.data.mean, data.data.std
    photos = color_fashion_mnist.photo_bank(tuple(color_fashion_mnist.PHOTOS), td.photo_side)
    items = {  # the Fashion-MNIST IDX files of `data.data_dir` (color_fashion_mnist's items)
        split: fashion_mnist.read_split(*datasets._fashion_paths(data.data, split))
        for split in ("train", "test")
    }
    rows = {}
    for seed in seeds:
        for shared in td.shared:
            key = ",".join(sorted(shared))
            print(f"== v1, v2 share {key}, seed {seed}", flush=True)
            scenes = {
                split: Scenes(*items[split], photos, td.canvas, seed + i)
                for i, split in enumerate(items)
            }

            def score(critic, params, scenes=scenes):
                tr = scenes["train"].tasks(td.eval_train, mean, std)
                te = scenes["test"].tasks(td.eval_test, mean, std)
                ftr, fte = (embed(critic, params, x, both=False) for x in (tr[0], te[0]))
                out = {"position_error": ridge_error(ftr, tr[3], fte, te[3], td.position_l2)}
                for name, k in (("item", 1), ("background", 2)):
                    scores = probe_and_knn(
                        (ftr, tr[k]), (fte, te[k]), **probe_args(pt), knn_k=0, knn_temperature=0.1
                    )
                    out[f"{name}_error"] = 100 * (1 - scores["top1"])
                return out

            pairs = lambda scenes=scenes, shared=shared: tuple(  # noqa: E731
                scenes[split].pairs(shared, td.batch, mean, std) for split in ("train", "test")
            )
            folder = os.path.join(workdir, f"{key.replace(',', '+')}_s{seed}")
            rows.setdefault(key, []).append(
                critic_cell(folder, study, seed, td.steps, pairs, score)
            )
    lines = [
        "| v1, v2 share | item cls. error (%) | background cls. error (%) | item loc. error (px) "
        "| I_NCE held-out (nats) | paper (digit err. %, bkgd err. %, loc. err. px) |",
        "|---|---|---|---|---|---|",
    ]
    for key, results in rows.items():
        cells = [
            _nats([r[f"{t}_error"] for r in results]) for t in ("item", "background", "position")
        ]
        paper = " / ".join(str(v) for v in study.paper_table4[key])
        lines.append(
            f"| {key} | {' | '.join(cells)} | {_nats([r['i_nce'] for r in results])} | {paper} |"
        )
    plot_task_dependence(rows, study, os.path.join(workdir, "task_dependence.png"))
    header = _header(
        study, seeds, "Task dependence (Table 4) on", td.batch, "Fashion-MNIST items on photos"
    )
    header.append(
        f"Scenes: {td.canvas}-px crops of scikit-image's photos (8 background classes), a white "
        f"Fashion-MNIST item at a uniform position; critic trained {td.steps} steps on train items, "
        f"I_NCE on test items; f1's embeddings probed ({td.eval_train} train / {td.eval_test} test "
        "scenes); the probe reads f1's embeddings, not the ResNet features. Errors: mean ± sample "
        "std over the seeds (no per-seed values); chance: item 90 %, background 87.5 %."
    )
    return _write(workdir, header, lines, rows)


def plot_task_dependence(rows: dict, study, out: str) -> str:
    """Per task, ours (mean ± std) beside the paper's, for each shared-factor set."""
    plt, fig, axes = _figure(3)
    keys = list(rows)
    x = np.arange(len(keys))
    titles = ("item cls. error (%)", "background cls. error (%)", "item loc. error (px)")
    for t, (ax, task) in enumerate(zip(axes, ("item", "background", "position"))):
        ours = [compare_methods.mean_std([r[f"{task}_error"] for r in rows[k]]) for k in keys]
        ax.bar(x - 0.2, [m for m, _ in ours], 0.4, yerr=[s for _, s in ours], label="ours")
        ax.bar(x + 0.2, [study.paper_table4[k][t] for k in keys], 0.4, label="paper")
        ax.set_xticks(x, [k.replace(",", "\n") for k in keys], fontsize=7)
        ax.set_title(titles[t])
        ax.legend(fontsize=8)
    fig.suptitle("v1, v2 share … (lower is better)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("study", choices=STUDIES)
    parser.add_argument("--config", default="configs/views/studies.py")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--seeds", default="")
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE for every config")
    args = parser.parse_args(argv)
    study = configs.load(_path(args.config))
    seeds = [int(s) for s in args.seeds.split(",") if s] or list(study.seeds)
    os.makedirs(args.workdir, exist_ok=True)
    run = dict(
        table5=table5,
        splits=splits,
        reverse_u=reverse_u,
        patches=patches,
        task_dependence=task_dependence,
    )[args.study]
    return run(study, seeds, args.set, args.workdir)


if __name__ == "__main__":
    main()
