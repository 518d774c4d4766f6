"""What a contrastive encoder of `color_fashion_mnist` matches its views on (issue 49, item 5).

    python experiments/color_study.py crops [--scale=0.2,1.0]
    python experiments/color_study.py diagnose --run=runs/color_study/base/<run> [--num=10000]
    python experiments/color_study.py diagnose --cell=color_speedrun.<cell> [--num=10000]

`crops`: how much of the item the MoCo v2 recipe's random resized crops keep (torchvision's
`RandomResizedCrop.get_params`, ratio 3/4–4/3, on the 32-px training images): the share of the
item's alpha mass inside one view, and inside the region that two views of the same image share.

`diagnose`: a finished pretraining run (a `compare_methods.py` run folder: its config and last
checkpoint), its encoder at random init and raw pixels, read on variants of the first `--num`
training items (probe train) and test items (probe test), all made from the generator's own draws
(`color_fashion_mnist.generate`: photo, crop, hue) and its compositing formula:
- `full`: the data set's images;
- `item_only`: the same items with the same tint on flat grey (0.5);
- `background_only`: the photo crops with no item;
and the probes (the config's logistic probe and weighted kNN, `compare_methods`'s): class from
`full` and `item_only`, photo (8-way) from `background_only` and `full`, hue (12 bins) from
`item_only` and `full`, the crop's place in its photo (4 × 4 bins) from `background_only`. Then a
one-factor swap test on the test items: A = (shape i, tint i, background i); changing one factor
to that of another item k gives A_shape, A_tint, A_background; `sensitivity` of a factor =
mean(1 − cos(f(A), f(A_factor))) / mean(1 − cos(f(A), f(A'))) with A' another whole image, i.e.
the share of a typical feature distance that changing that factor alone makes.

Fixes are screened with `compare_methods.py` itself (its random-init and raw-pixel rows), with
the cpu600 budget (`CPU600_SETS`) and data or recipe overrides; `recipe_override` writes the
override string of a changed MoCo v2 recipe.
"""

from __future__ import annotations

import argparse
import json
import math
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from experiments.grids import CPU600_BUDGET, SUBSET  # noqa: E402
from ssl_jax.data.sources import color_fashion_mnist as cfm  # noqa: E402

CPU600_SETS = (*CPU600_BUDGET, SUBSET)  # the cpu600 grid's budget for the colour section's cells
GREY = 0.5  # the flat background of `item_only`


# --------------------------------------------------------------------------------------------------
# Variants of the data set (numpy)


def parts(items: np.ndarray, options: cfm.Options, split: str) -> dict[str, np.ndarray]:
    """The generator's draws for uint8 items `[N, 28, 28(, 1)]` of `split` split into factors:
    `alpha` float32 `[N, S, S]` (the upscaled item), `tint` float32 `[N, 3]` (its RGB), `background`
    float32 `[N, S, S, 3]` (the photo crop), and the draws `photo`, `top`, `left`, `hue`."""
    items = np.asarray(items).reshape(-1, 28, 28)
    draws = cfm.generate(items, options, split)
    size = options.size
    side = max(size, round(size / options.background_crop))
    bank = cfm.photo_bank(options.backgrounds, side)
    up = cfm._upsample_matrix(size)
    alpha = up @ (items.astype(np.float32) * np.float32(1 / 255)) @ up.T
    rows = draws["top"][:, None] + np.arange(size)[None, :]  # [N, S]
    cols = draws["left"][:, None] + np.arange(size)[None, :]
    background = bank[draws["photo"][:, None, None], rows[:, :, None], cols[:, None, :]]
    return {
        "alpha": alpha,
        "tint": cfm.hue_to_rgb(draws["hue"]),
        "background": background,
        **{k: draws[k] for k in ("photo", "top", "left", "hue")},
    }


def compose(alpha: np.ndarray, tint: np.ndarray, background) -> np.ndarray:
    """The generator's compositing, `background + alpha · (tint − background)` rounded to uint8
    `[N, S, S, 3]`; `background` an array `[N, S, S, 3]` or a grey level."""
    bg = np.broadcast_to(np.asarray(background, np.float32), alpha.shape + (3,))
    out = bg + alpha[..., None] * (tint[:, None, None, :] - bg)
    return (np.clip(out, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def variants(p: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """uint8 images of `parts` `p`: 'full', 'item_only' (grey background), 'background_only'."""
    return {
        "full": compose(p["alpha"], p["tint"], p["background"]),
        "item_only": compose(p["alpha"], p["tint"], GREY),
        "background_only": compose(np.zeros_like(p["alpha"]), p["tint"], p["background"]),
    }


def swaps(p: dict[str, np.ndarray], other: np.ndarray) -> dict[str, np.ndarray]:
    """One-factor swaps of `parts` `p`: each image with its shape, tint or background replaced by
    item `other[i]`'s (`other` a permutation without fixed points), and item `other[i]` whole."""
    a, t, b = p["alpha"], p["tint"], p["background"]
    return {
        "shape": compose(a[other], t, b),
        "tint": compose(a, t[other], b),
        "background": compose(a, t, b[other]),
        "whole": compose(a[other], t[other], b[other]),
    }


def derangement(rng: np.random.Generator, n: int) -> np.ndarray:
    """A random permutation of `range(n)` (n ≥ 2) with no fixed point: one cycle through a shuffled
    order."""
    order = rng.permutation(n)
    perm = np.empty(n, np.int64)
    perm[order] = np.roll(order, 1)
    return perm


def hue_bins(hue: np.ndarray, bins: int = 12) -> np.ndarray:
    """int32 bin of hues in turns, `bins` equal arcs starting at 0."""
    return np.minimum((np.mod(hue, 1.0) * bins).astype(np.int32), bins - 1)


def place_bins(top: np.ndarray, left: np.ndarray, span: int, bins: int = 4) -> np.ndarray:
    """int32 cell of crop offsets in a `bins × bins` grid over offsets `0 .. span − 1`."""
    r = np.minimum(top * bins // span, bins - 1)
    c = np.minimum(left * bins // span, bins - 1)
    return (r * bins + c).astype(np.int32)


def sensitivity(f: np.ndarray, swapped: dict[str, np.ndarray]) -> dict[str, float]:
    """Per factor: mean(1 − cos(f, f_factor)) / mean(1 − cos(f, f_whole)) (features `[N, D]`)."""

    def dist(x, y):
        x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        y = y / np.maximum(np.linalg.norm(y, axis=1, keepdims=True), 1e-12)
        return float(np.mean(1.0 - np.sum(x * y, axis=1)))

    whole = dist(f, swapped["whole"])
    return {k: dist(f, v) / whole for k, v in swapped.items() if k != "whole"}


# --------------------------------------------------------------------------------------------------
# Crops


def rrc_boxes(
    rng: np.random.Generator, n: int, size: int, scale=(0.2, 1.0), ratio=(3 / 4, 4 / 3)
) -> np.ndarray:
    """int `[n, 4]` (top, left, height, width): torchvision `RandomResizedCrop.get_params` on a
    `size × size` image (10 attempts, then the centre crop of the whole image)."""
    out = np.empty((n, 4), np.int64)
    area = size * size
    for i in range(n):
        for _ in range(10):
            target = area * rng.uniform(*scale)
            aspect = math.exp(rng.uniform(math.log(ratio[0]), math.log(ratio[1])))
            w = int(round(math.sqrt(target * aspect)))
            h = int(round(math.sqrt(target / aspect)))
            if 0 < w <= size and 0 < h <= size:
                out[i] = (rng.integers(0, size - h + 1), rng.integers(0, size - w + 1), h, w)
                break
        else:
            out[i] = (0, 0, size, size)
    return out


def box_mask(boxes: np.ndarray, size: int) -> np.ndarray:
    """bool `[n, size, size]`: the pixels inside each box (top, left, height, width)."""
    r = np.arange(size)
    top, left, h, w = (boxes[:, k, None] for k in range(4))
    rows = (r[None] >= top) & (r[None] < top + h)
    cols = (r[None] >= left) & (r[None] < left + w)
    return rows[:, :, None] & cols[:, None, :]


def crop_stats(alpha: np.ndarray, rng: np.random.Generator, scale=(0.2, 1.0)) -> dict[str, float]:
    """Two RRC views per item of `alpha` `[N, S, S]`: mean share of the item's alpha mass inside a
    view and inside the two views' common region, the share of pairs whose common region holds
    < 10 % of it (or is empty), and the mean item share (alpha) of the common region's pixels."""
    n, size = alpha.shape[0], alpha.shape[1]
    m1 = box_mask(rrc_boxes(rng, n, size, scale), size)
    m2 = box_mask(rrc_boxes(rng, n, size, scale), size)
    both = m1 & m2
    mass = alpha.sum((1, 2))
    in_view = (alpha * m1).sum((1, 2)) / mass
    shared = (alpha * both).sum((1, 2)) / mass
    pixels = both.sum((1, 2))
    item_share = np.where(pixels > 0, (alpha * both).sum((1, 2)) / np.maximum(pixels, 1), 0.0)
    return {
        "item_in_view": float(in_view.mean()),
        "item_in_common": float(shared.mean()),
        "common_below_10pct": float(np.mean(shared < 0.1)),
        "common_empty": float(np.mean(pixels == 0)),
        "item_share_of_common_pixels": float(item_share[pixels > 0].mean()),
        "item_share_of_image": float(alpha.mean()),
    }


def recipe_override(scale=(0.2, 1.0), hue: float = 0.1, jitter_p: float = 0.8) -> str:
    """`data.recipes.mocov2=...`: `recipes.mocov2(32, blur=False)` with RRC `scale`, colour-jitter
    `hue` (turns, ≤ 0.5) and jitter probability `jitter_p`."""
    from ssl_jax.data import recipes

    ops = []
    for op in recipes.mocov2(32, blur=False):
        op = dict(op)
        if op["op"] == "random_resized_crop":
            op["scale"] = tuple(float(s) for s in scale)
        if op["op"] == "color_jitter":
            op.update(hue=float(hue), p=float(jitter_p))
        ops.append(op)
    return "data.recipes.mocov2=" + repr(tuple(ops)).replace(" ", "")


# --------------------------------------------------------------------------------------------------
# Commands


def _items(split: str):
    from ssl_jax.data.sources import fashion_mnist

    paths = fashion_mnist.split_paths(fashion_mnist.FASHION_MNIST_DIR, split, cfm.NAME)
    return fashion_mnist.read_split(*paths)


def crops_main(args) -> None:
    items, _ = _items("train")
    n = args.num
    options = cfm.Options()
    up = cfm._upsample_matrix(options.size)
    alpha = up @ (items[:n].reshape(-1, 28, 28).astype(np.float32) / 255) @ up.T
    scale = tuple(float(s) for s in args.scale.split(","))
    result = crop_stats(alpha, np.random.default_rng(0), scale)
    print(json.dumps({"scale": scale, "num": n, **result}, indent=1))


def _features(fn, variables, images: np.ndarray, batch: int = 500) -> np.ndarray:
    out = []
    for s in range(0, len(images), batch):
        x = images[s : s + batch]
        pad = batch - len(x)
        if pad:
            x = np.concatenate([x, np.zeros((pad,) + x.shape[1:], x.dtype)])
        out.append(np.asarray(fn(variables, x))[: batch - pad])
    return np.concatenate(out).astype(np.float32)


def diagnose_main(args) -> None:
    from experiments.compare_methods import load_config
    from ssl_jax import train
    from ssl_jax.evaluate.evaluators import probe_and_knn, probe_args
    from ssl_jax.evaluate.run_features import features_fn

    if args.cell:  # a campaign cell: its config as it trained, its newest checkpoint
        from experiments import campaign_cells, campaign_runner

        config, cell_run, _ = campaign_cells.trained_cell(args.cell)
        args.run = args.run or cell_run
        exp, state = campaign_runner.finished_state(config, args.run)
    else:
        config = load_config(args.config, [*CPU600_SETS, *args.set], args.seed)
        state = train.train_and_evaluate(config, args.run)  # restores the finished run
        exp = train.build_experiment(config)
    init = train.init_or_restore(exp, None)
    fn = features_fn(exp)
    options = cfm.check_config(config.data.color_fashion_mnist)
    span = max(options.size, round(options.size / options.background_crop)) - options.size + 1
    n = args.num
    data = {}
    for split in ("train", "test"):
        items, labels = _items(split)
        p = parts(items[:n], options, split)
        data[split] = {
            "images": variants(p),
            "label": np.asarray(labels[:n], np.int32),
            "photo": p["photo"],
            "hue": hue_bins(p["hue"]),
            "place": place_bins(p["top"], p["left"], span),
        }
        if split == "test":
            swapped = swaps(p, derangement(np.random.default_rng(1), n))
    pt = config.evals.probe_table
    tests = [  # (variant, target)
        ("full", "label"),
        ("item_only", "label"),
        ("background_only", "photo"),
        ("background_only", "place"),
        ("full", "photo"),
        ("item_only", "hue"),
        ("full", "hue"),
    ]
    encoders = {
        "pretrained": {"params": state.params, "batch_stats": state.batch_stats},
        "random_init": {"params": init.params, "batch_stats": init.batch_stats},
        "pixels": None,
    }
    if not args.pixels:  # the pixel rows are the data's, the same for every run (and slow)
        del encoders["pixels"]
    results = {}
    for name, variables in encoders.items():
        feats = {}
        for split in ("train", "test"):
            for v, images in data[split]["images"].items():
                feats[split, v] = (
                    images.reshape(len(images), -1).astype(np.float32) / 255.0
                    if variables is None
                    else _features(fn, variables, images)
                )
        row = {}
        for variant, target in tests:
            tr = (feats["train", variant], data["train"][target])
            te = (feats["test", variant], data["test"][target])
            r = probe_and_knn(
                tr, te, **probe_args(pt), knn_k=pt.knn_k, knn_temperature=pt.knn_temperature
            )
            row[f"{variant}->{target}"] = {"probe": r["top1"], "knn": r["knn_top1"]}
            print(name, variant, target, row[f"{variant}->{target}"], flush=True)
        f_sw = {
            k: (
                v.reshape(n, -1).astype(np.float32) / 255.0
                if variables is None
                else _features(fn, variables, v)
            )
            for k, v in swapped.items()
        }
        row["sensitivity"] = sensitivity(feats["test", "full"], f_sw)
        print(name, "sensitivity", row["sensitivity"], flush=True)
        results[name] = row
    out = os.path.join(args.run, f"diagnose_{n}.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results, indent=1))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("crops")
    c.add_argument("--scale", default="0.2,1.0")
    c.add_argument("--num", type=int, default=10000)
    d = sub.add_parser("diagnose")
    d.add_argument("--run", default="", help="a finished compare_methods.py run folder")
    d.add_argument(
        "--cell",
        default="",
        help="or a finished campaign cell, GRID.CELL (its config; --run: its workdir, default "
        "runs/campaign/GRID/CELL)",
    )
    d.add_argument("--config", default="configs/mocov2_color_fashion_mnist.py")
    d.add_argument("--set", action="append", default=[], help="the run's own overrides")
    d.add_argument("--seed", type=int, default=0, help="the run's seed")
    d.add_argument("--num", type=int, default=10000)
    d.add_argument(
        "--pixels", action=argparse.BooleanOptionalAction, default=True, help="raw-pixel rows"
    )
    args = parser.parse_args(argv)
    if args.command == "diagnose" and not (args.run or args.cell):
        parser.error("diagnose needs --run or --cell")
    {"crops": crops_main, "diagnose": diagnose_main}[args.command](args)


if __name__ == "__main__":
    main()
