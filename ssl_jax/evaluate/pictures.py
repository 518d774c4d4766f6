"""Pictures of a pretraining run, written as PNG files into its workdir.

- `curves.png`: training curves from `metrics.jsonl` — loss, kNN accuracy (monitor `eval/knn_top1`
  and the kNN job's `knn/top1_k*`), learning rate;
- `augmentations.png`: the configured views — each row an image of the training split, then two
  independent draws of every view of `config.data.views` (colour ops included with `device_ops`);
- `tsne.png`: 2-D t-SNE (scikit-learn) of backbone features of the test split, coloured by class.

`python -m ssl_jax.evaluate.pictures --workdir=W [--num_points=2000]`; the default job
(`configs/mocov2_fashion_mnist.py`) writes them at the end.
"""

from __future__ import annotations

import os

import jax
import matplotlib
import ml_collections
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ssl_jax import checkpoint  # noqa: E402
from ssl_jax.data import datasets, device_pipeline, pipeline, recipe_ops  # noqa: E402
from ssl_jax.data.device import canvas  # noqa: E402
from ssl_jax.data.device import recipe as device_recipe  # noqa: E402
from ssl_jax.output import progress

CURVES_FILE = "curves.png"
AUGMENTATIONS_FILE = "augmentations.png"
TSNE_FILE = "tsne.png"


def _save(fig, path: str) -> str:
    """Write atomically, on process 0 only (every process computes: the t-SNE features need all)."""
    if jax.process_index() == 0:
        tmp = path + ".tmp.png"
        fig.savefig(tmp, dpi=110, bbox_inches="tight")
        os.replace(tmp, path)
    plt.close(fig)
    return path


def _series(records: list[dict], key: str) -> tuple[np.ndarray, np.ndarray]:
    by_step = {}
    for r in records:  # a resumed run may repeat steps: later records win
        if key in r:
            by_step[int(r["step"])] = float(r[key])
    steps = np.asarray(sorted(by_step))
    return steps, np.asarray([by_step[s] for s in steps])


def training_curves(workdir: str, out: str | None = None) -> str:
    """Loss, kNN top-1 and learning rate against the step, from `metrics.jsonl`."""
    from ssl_jax.output.writers import read_metrics  # writers imports clu's TensorBoard writer

    records = read_metrics(workdir)
    if not records:
        raise FileNotFoundError(f"{workdir}/metrics.jsonl is missing or empty: nothing to plot")
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    panels = [
        ("loss", ["train/loss"], "loss"),
        ("kNN top-1 accuracy", None, "top-1 (%)"),
        ("learning rate", ["train/lr"], "lr"),
    ]
    knn_keys = sorted(
        {k for r in records for k in r if k == "eval/knn_top1" or k.startswith("knn/top1_k")}
    )
    for ax, (title, keys, ylabel) in zip(axes, panels):
        keys = knn_keys if keys is None else keys
        plotted = False
        for key in keys:
            steps, values = _series(records, key)
            if len(steps) == 0:
                continue
            if "top1" in key:
                values = 100 * values
            marker = "o" if len(steps) < 30 else None
            ax.plot(steps, values, marker=marker, label=key)
            plotted = True
        if not plotted:
            what = (
                "no kNN evaluation logged\n(no config.evals kNN entry; run the knn job)"
                if title.startswith("kNN")
                else f"{', '.join(keys)} not logged"
            )
            ax.text(0.5, 0.5, what, ha="center", va="center", transform=ax.transAxes)
        elif len(keys) > 1 or title.startswith("kNN"):
            ax.legend(fontsize=8)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    fig.suptitle(os.path.basename(os.path.abspath(workdir)))
    return _save(fig, out or os.path.join(workdir, CURVES_FILE))


def _display(images: np.ndarray) -> np.ndarray:
    """uint8 / float [0, 1] `[H, W, C]` → something imshow shows (gray for one channel)."""
    return images[..., 0] if images.shape[-1] == 1 else images


def augmentation_views(
    config: ml_collections.ConfigDict, *, rows: int = 6, draws: int = 2
) -> tuple[list[str], dict[tuple[int, int], np.ndarray]]:
    """The first `rows` training images and `draws` independent draws of every configured view,
    made by the training pipeline itself (`pipeline.train_iterator`, plus the on-device colour ops
    when `config.data.device_ops`; with `config.data.pipeline = 'device'`, the whole recipe on the
    device by `pipeline.device_train_iterator`, without TensorFlow), in RGB: a `color_space` op
    (the model's input normalisation) is left out. Returns the column titles and `{(row, column):
    [H, W, C] image}` (uint8 or float in [0, 1]); column 0 is the original."""
    pc = ml_collections.ConfigDict(config.to_dict())
    pc.data.train_subset = rows
    pc.data.shuffle_buffer = rows
    pc.data.cache = False  # only `rows` examples are read
    pc.global_batch_size = rows
    on_device = device_pipeline.resolve(pc) == "device"
    if on_device:
        data = pipeline.device_train_iterator(pc)
    else:
        data = pipeline.train_iterator(pc, num_parallel_calls=1)
    names = list(pc.data.views)
    columns = ["original"]
    originals = datasets.first_images(pc.data, pc.data.train_split, rows)
    cells = {
        (r, 0): pipeline.adapt_channels(image, int(pc.data.channels))
        for r, image in enumerate(originals)
    }
    for d in range(draws):  # one epoch per draw: every view re-drawn
        batch = next(data)
        order = np.argsort(batch["index"])
        for v, view in enumerate(canvas.batch_views(pc.data, batch)):
            view = np.asarray(view)[order]
            recipe = tuple(dict(op) for op in pc.data.recipes[names[v]])
            if pc.data.device_ops and not on_device:  # on the device path every op already ran
                rgb_ops = tuple(op for op in recipe if op["op"] not in recipe_ops.FLOAT_OPS)
                x = device_recipe.apply_recipe(
                    view, rgb_ops, jax.random.PRNGKey(1000 * d + v), pc.data.mean, pc.data.std
                )
                x = np.asarray(x) * np.asarray(pc.data.std) + np.asarray(pc.data.mean)
                view = np.clip(x, 0.0, 1.0)
            spaces = [op["space"] for op in recipe if op["op"] == "color_space"]
            shown = f", RGB before {spaces[0]}" if spaces else ""
            columns.append(f"view {v + 1} ({names[v]}{shown})\ndraw {d + 1}")
            for r in range(rows):
                cells[(r, len(columns) - 1)] = np.asarray(view[r])
    return columns, cells


def augmentation_grid(
    config: ml_collections.ConfigDict, out: str, *, rows: int = 6, draws: int = 2
) -> str:
    """A picture of `augmentation_views`: one row per image, one column per view and draw."""
    columns, cells = augmentation_views(config, rows=rows, draws=draws)
    fig, axes = plt.subplots(
        rows, len(columns), figsize=(1.6 * len(columns), 1.6 * rows), squeeze=False
    )
    gray = int(config.data.channels) == 1
    for (r, c), image in cells.items():
        ax = axes[r][c]
        ax.imshow(
            _display(image),
            cmap="gray" if gray else None,
            vmin=0,
            vmax=255 if image.dtype == np.uint8 else 1,
        )
    for c, title in enumerate(columns):
        axes[0][c].set_title(title, fontsize=8)
    for ax in axes.flat:
        ax.set_xticks([])
        ax.set_yticks([])
    data = config.data
    fig.suptitle(f"{data.name} {data.train_split}: views {tuple(data.views)}", fontsize=10)
    return _save(fig, out)


TSNE_POINTS = 2000


def tsne_points(config) -> int:
    """A run's t-SNE size: `TSNE_POINTS` test images, at most as many as its probe tables' test
    sets (a `:runlocal` table of 256 images gets a t-SNE of 256: a second, not half a minute)."""
    evals = config.get("evals") or {}
    sizes = [int(e.get("num_test", -1)) for e in evals.values() if e.get("type") == "probe_table"]
    return min([TSNE_POINTS, *(n for n in sizes if n > 0)])


def tsne(
    workdir: str, out: str | None = None, *, num_points: int = TSNE_POINTS, seed: int = 0
) -> str:
    """t-SNE of the backbone features (online weights, latest checkpoint) of the first
    `num_points` test images, coloured by class."""
    from sklearn.manifold import TSNE

    from ssl_jax.evaluate.encoder import load_encoder

    encoder = load_encoder(workdir)
    data = encoder.config.data
    split = data.eval_test_split
    batch = max(jax.device_count(), 256 // jax.device_count() * jax.device_count())
    feats, labels = encoder.split_features(split, batch_size=batch, limit=num_points)
    feats = feats / np.maximum(np.linalg.norm(feats, axis=1, keepdims=True), 1e-12)
    points = TSNE(
        n_components=2,
        init="pca",
        perplexity=min(30.0, max(5.0, (len(feats) - 1) / 3)),
        random_state=seed,
    ).fit_transform(feats)
    fig, ax = plt.subplots(figsize=(8, 7))
    classes = np.unique(labels)
    names = datasets.CLASS_NAMES.get(data.name, ())
    cmap = plt.get_cmap("tab10" if len(classes) <= 10 else "tab20")
    for i, c in enumerate(classes):
        sel = labels == c
        name = names[c] if 0 <= c < len(names) else str(int(c))
        color = cmap(i % cmap.N) if len(classes) <= 20 else None
        size = 4 if len(points) > 500 else 16
        ax.scatter(points[sel, 0], points[sel, 1], s=size, color=color, label=name)
    if len(classes) <= 20:
        ax.legend(markerscale=3, fontsize=8, loc="best")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(
        f"t-SNE of {encoder.config.model.backbone} features, {data.name} {split} "
        f"({len(feats)} images), step {encoder.step}"
    )
    return _save(fig, out or os.path.join(workdir, TSNE_FILE))


def write_all(workdir: str, *, num_points: int = TSNE_POINTS) -> list[str]:
    """All three pictures of a pretraining workdir; returns their paths. Call it on every process
    (the t-SNE features are computed on all devices); only process 0 writes."""
    config = checkpoint.read_config(workdir)
    with progress.phase("pictures: training curves and augmentations"):
        paths = [training_curves(workdir)]
        paths.append(augmentation_grid(config, os.path.join(workdir, AUGMENTATIONS_FILE)))
    with progress.phase(f"pictures: t-SNE of {num_points} test images' features"):
        paths.append(tsne(workdir, num_points=num_points))
    progress.say("pictures: " + ", ".join(paths))
    return paths


def after_pretraining(config: ml_collections.ConfigDict, workdir: str) -> list[str]:
    """The pictures of a completed pretraining whose probe table ran (at its last step), as the
    default job ends; none otherwise. On every process, as `write_all`."""
    evals = config.get("evals") or {}
    if any(e.get("type") == "probe_table" and e.get("every_steps", 0) >= 0 for e in evals.values()):
        return write_all(workdir, num_points=tsne_points(config))
    return []


def main(argv) -> None:
    del argv
    from absl import flags

    from ssl_jax.config_checks import ConfigError
    from ssl_jax.data.datasets import DataError

    progress.quiet_logs(verbose=flags.FLAGS["verbosity"].present > 0)
    try:
        write_all(flags.FLAGS.workdir, num_points=flags.FLAGS.num_points)
    except (checkpoint.CheckpointError, ConfigError, DataError) as e:
        progress.user_error(e)


if __name__ == "__main__":
    from absl import app, flags

    flags.DEFINE_string(
        "workdir", None, "Pretraining workdir (config.json, metrics.jsonl, checkpoints)."
    )
    flags.DEFINE_integer("num_points", 2000, "Test images in the t-SNE.")
    flags.mark_flags_as_required(["workdir"])
    app.run(main)
