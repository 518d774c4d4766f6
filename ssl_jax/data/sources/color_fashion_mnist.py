"""`color_fashion_mnist`: Fashion-MNIST items tinted and composited on photographs, no download.

Generative story of item `i` of a split (`generate`), all draws from `seed` and the split:
1. shape: Fashion-MNIST item `i` (28 px, upscaled bilinearly to `size`) is the alpha mask; its label
   is the label. Only the shape carries the label.
2. background: a photo drawn uniformly from `backgrounds` (its centre square, resized so that a
   `size` crop covers `background_crop` of its side) and a uniformly placed `size × size` crop.
3. tint: a hue `h`; the item's colour is HSV(h, 1, 1). `tint` says where h comes from:
   'independent' (default) h ~ U[0, 1) independent of everything else; 'background' h = the
   complement (+ 1/2 turn) of the crop's mean hue (the hue of its mean RGB), so the tint is a
   function of the background; 'fixed' h = `hue` for every item.
4. pixel = alpha · tint + (1 − alpha) · background, uint8 RGB `[size, size, 3]`.
The nuisance factors are the tint and the background (which photo, where cropped); `generate`
returns them with the images (`photo`, `top`, `left`, `hue`).

The photos are colour images that scikit-image ships inside its wheel (`skimage/data/*`, read as
files, never fetched by pooch): astronaut, chelsea, coffee, rocket, motorcycle_left,
hubble_deep_field, ihc, retina.

Options are `config.data.color_fashion_mnist` (defaults `DEFAULTS`, checked by `check_config`):
`size` 32 or 64, `seed`, `tint`, `hue`, `backgrounds` (names of `PHOTOS`; () = all),
`background_crop` (fraction of a photo's side that a crop covers), `cache_dir`, and `views`, how
training views are made (not a generator option: the cache and the evaluation images are the same
under both): 'shared' (default) cuts every view of an image from its one generated composite, so
the views share its tint and photo crop; 'item' composites each training view anew from the item
(`composite` with the view's own draws: its own photo crop and tint, by the same rules), then runs
the view's recipe (`datasets.train_source`; host tf.data only, `check_views`). The items
and labels are Fashion-MNIST's IDX files (`config.data.data_dir`, as `fashion_mnist`), with its
splits 'train' (60000) and 'test' (10000). A split is generated on first use (vectorised numpy,
seconds) and cached as `.npz` in `cache_dir` (default `$XDG_CACHE_HOME/ssl_jax` or
`~/.cache/ssl_jax`) under a name holding a hash of `VERSION`, the options and the IDX file, so a
changed option regenerates.

`python -m ssl_jax.data.sources.color_fashion_mnist --grid docs/color_fashion_mnist.png` draws 8 × 8 test
items with their labels.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ssl_jax.config_checks import ConfigError
from ssl_jax.data.sources import fashion_mnist

VERSION = 1  # bump when the generator changes: every cached file is then regenerated
NAME = "color_fashion_mnist"
# Photo name → file in skimage/data (colour photographs inside the scikit-image wheel).
PHOTOS = {
    "astronaut": "astronaut.png",
    "chelsea": "chelsea.png",
    "coffee": "coffee.png",
    "rocket": "rocket.jpg",
    "motorcycle_left": "motorcycle_left.png",
    "hubble_deep_field": "hubble_deep_field.jpg",
    "ihc": "ihc.png",
    "retina": "retina.jpg",
}
SIZES = (32, 64)
TINTS = ("independent", "background", "fixed")
VIEWS = ("shared", "item")
DEFAULTS = {
    "size": 32,
    "seed": 0,
    "tint": "independent",
    "hue": 0.0,
    "backgrounds": (),  # all of PHOTOS
    "background_crop": 0.25,
    "cache_dir": "",
    "views": "shared",  # training views (`check_views`); not a generator option
}
_SPLIT_STREAMS = {"train": 0, "test": 1}  # independent random streams per split
_CHUNK = 4096  # items composited at once (bounds the float32 intermediates)


@dataclasses.dataclass(frozen=True)
class Options:
    """Generator options (module docstring); `check_config` builds them from a config."""

    size: int = 32
    seed: int = 0
    tint: str = "independent"
    hue: float = 0.0
    backgrounds: tuple[str, ...] = tuple(PHOTOS)
    background_crop: float = 0.25


def _get(cfg: Any, key: str) -> Any:
    if cfg is None:
        return DEFAULTS[key]
    value = cfg.get(key, None) if hasattr(cfg, "get") else getattr(cfg, key, None)
    return DEFAULTS[key] if value is None else value


def check_config(cfg: Any) -> Options:
    """`config.data.color_fashion_mnist` (ConfigDict, dict or None: defaults) → `Options`; a bad
    value raises `ConfigError` naming the key and the allowed values."""
    where = "config.data.color_fashion_mnist"
    if cfg is not None and hasattr(cfg, "keys"):
        unknown = set(cfg.keys()) - set(DEFAULTS)
        if unknown:
            raise ConfigError(
                f"{where}: unknown keys {sorted(unknown)}; allowed {sorted(DEFAULTS)}"
            )
    size, seed, tint = _get(cfg, "size"), _get(cfg, "seed"), _get(cfg, "tint")
    hue, crop = _get(cfg, "hue"), _get(cfg, "background_crop")
    backgrounds = _get(cfg, "backgrounds")
    if isinstance(backgrounds, str):
        backgrounds = (backgrounds,)
    backgrounds = tuple(backgrounds) or tuple(PHOTOS)
    if size not in SIZES:
        raise ConfigError(f"{where}.size={size!r}; allowed: {SIZES}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ConfigError(f"{where}.seed={seed!r}; allowed: an int >= 0")
    if tint not in TINTS:
        raise ConfigError(f"{where}.tint={tint!r}; allowed: {TINTS}")
    if not isinstance(hue, (int, float)) or not 0.0 <= hue < 1.0:
        raise ConfigError(f"{where}.hue={hue!r}; allowed: [0, 1) turns (tint='fixed')")
    bad = [b for b in backgrounds if b not in PHOTOS]
    if bad or not backgrounds or len(set(backgrounds)) != len(backgrounds):
        raise ConfigError(
            f"{where}.backgrounds={backgrounds!r}: distinct names of {tuple(PHOTOS)} (() = all)"
        )
    if not isinstance(crop, (int, float)) or not 0.0 < crop <= 1.0:
        raise ConfigError(f"{where}.background_crop={crop!r}; allowed: (0, 1]")
    _views(cfg)
    return Options(int(size), int(seed), tint, float(hue), backgrounds, float(crop))


def _views(cfg: Any) -> str:
    views = _get(cfg, "views")
    if views not in VIEWS:
        raise ConfigError(f"config.data.{NAME}.views={views!r}; allowed: {VIEWS}")
    return views


def item_views(data: Any) -> bool:
    """Whether `config.data` asks for training views composited anew per view (`views='item'`)."""
    cfg = data.get(NAME, None) if hasattr(data, "get") else getattr(data, NAME, None)
    return _views(cfg) == "item"


def check_views(data: Any) -> None:
    """`views` against the rest of `config.data`: 'item' needs this data set and views made on the
    host by tf.data, each from its own composite (not `pipeline='device'`, which holds the
    generated images in device memory, nor `device_crops`, which cuts every view from one image).
    Raises ConfigError."""
    if not item_views(data):
        return
    where = f"config.data.{NAME}.views='item'"
    if data.name != NAME:
        raise ConfigError(
            f"{where} composites each training view from a {NAME} item; config.data.name="
            f"{data.name!r}: allowed 'shared' (or data.name='{NAME}')"
        )
    if data.get("pipeline", "tfdata") == "device":
        raise ConfigError(
            f"{where} composites each view on the host; config.data.pipeline='device' trains on "
            "the generated images in device memory: allowed pipeline 'tfdata' or 'auto'"
        )
    if data.get("device_crops", 0):
        raise ConfigError(
            f"{where} composites each view on the host; config.data.device_crops="
            f"{data.device_crops} cuts every view from one image: allowed device_crops 0"
        )


def cache_dir(cfg: Any) -> str:
    """Folder of the cached `.npz` splits (module docstring)."""
    folder = _get(cfg, "cache_dir")
    if folder:
        return folder
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "ssl_jax")


# --------------------------------------------------------------------------------------------------
# Generation (numpy)


def _photo_dir() -> str:
    try:
        import skimage  # only its data folder is used
    except ImportError as e:
        raise ImportError(
            f"{NAME} composites on the photos inside scikit-image: pip install scikit-image"
        ) from e
    return os.path.join(os.path.dirname(skimage.__file__), "data")


@functools.lru_cache(maxsize=8)
def photo_bank(names: tuple[str, ...], side: int) -> np.ndarray:
    """float32 `[P, side, side, 3]` in [0, 1]: each photo's centre square, resized (PIL, bicubic
    with antialiasing) to `side`."""
    from PIL import Image

    out = []
    for name in names:
        with Image.open(os.path.join(_photo_dir(), PHOTOS[name])) as im:
            im = im.convert("RGB")
            w, h = im.size
            s = min(w, h)
            box = ((w - s) // 2, (h - s) // 2, (w - s) // 2 + s, (h - s) // 2 + s)
            im = im.resize((side, side), Image.Resampling.BICUBIC, box=box, reducing_gap=3.0)
            out.append(np.asarray(im, np.float32) / 255.0)
    return np.stack(out)


def _upsample_matrix(size: int, n_in: int = 28) -> np.ndarray:
    """`[size, n_in]` bilinear weights (half-pixel centres, edges clamped)."""
    centre = (np.arange(size) + 0.5) * n_in / size - 0.5
    w = np.maximum(
        0.0, 1.0 - np.abs(np.arange(n_in)[None, :] - np.clip(centre, 0, n_in - 1)[:, None])
    )
    return (w / w.sum(1, keepdims=True)).astype(np.float32)


def hue_to_rgb(hue: np.ndarray) -> np.ndarray:
    """HSV(hue, 1, 1) → RGB `[..., 3]` in [0, 1] (hue in turns)."""
    h6 = 6.0 * np.asarray(hue, np.float32)[..., None]
    offsets = np.array([0.0, 2.0, 4.0], np.float32)
    return np.clip(np.abs(np.mod(h6 - offsets, 6.0) - 3.0) - 1.0, 0.0, 1.0)


def mean_hue(mean_rgb: np.ndarray) -> np.ndarray:
    """Hue (turns) of colours `[..., 3]` (e.g. an image's mean RGB): the angle in the opponent plane
    (R − (G + B)/2, √3/2 (G − B)), the exact HSV hue at primaries and secondaries."""
    r, g, b = mean_rgb[..., 0], mean_rgb[..., 1], mean_rgb[..., 2]
    angle = np.arctan2((np.sqrt(3.0) / 2.0) * (g - b), r - 0.5 * (g + b))
    return np.mod(angle / (2 * np.pi), 1.0).astype(np.float32)


def composite(items: np.ndarray, u: np.ndarray, options: Options) -> dict[str, np.ndarray]:
    """Steps 2-4 of the module docstring for uint8 items `[N, 28, 28(, 1)]`, each from its own row
    of uniforms `u [N, 4]` in [0, 1) (photo, top, left, hue): `{'image': uint8 [N, size, size, 3],
    'photo': int32 (index into options.backgrounds), 'top', 'left': int32 (crop offsets in the
    resized photo), 'hue': float32 (turns)}`. `generate` draws `u` once per item; training views
    with `views='item'` draw a row per view (`datasets.train_source`)."""
    items = np.asarray(items).reshape(-1, 28, 28)
    n, size = items.shape[0], options.size
    side = max(size, round(size / options.background_crop))
    bank = photo_bank(options.backgrounds, side)
    photo = np.minimum((u[:, 0] * len(bank)).astype(np.int32), len(bank) - 1)
    top = np.minimum((u[:, 1] * (side - size + 1)).astype(np.int32), side - size)
    left = np.minimum((u[:, 2] * (side - size + 1)).astype(np.int32), side - size)
    hue = u[:, 3].astype(np.float32)
    if options.tint == "fixed":
        hue = np.full(n, options.hue, np.float32)
    up = _upsample_matrix(size)
    # every size × size window of every photo, channels first: [P, side', side', 3, size, size]
    windows = np.lib.stride_tricks.sliding_window_view(bank, (size, size), axis=(1, 2))
    images = np.empty((n, size, size, 3), np.uint8)
    for s in range(0, n, _CHUNK):
        e = min(n, s + _CHUNK)
        bg = windows[photo[s:e], top[s:e], left[s:e]]  # [n, 3, size, size]
        if options.tint == "background":
            hue[s:e] = np.mod(mean_hue(bg.mean(axis=(2, 3))) + 0.5, 1.0)
        alpha = up @ (items[s:e].astype(np.float32) * np.float32(1 / 255)) @ up.T  # [n, size, size]
        alpha = alpha[:, None]
        tint = hue_to_rgb(hue[s:e])[:, :, None, None]
        out = bg + alpha * (tint - bg)
        images[s:e] = (np.clip(out, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8).transpose(0, 2, 3, 1)
    return {"image": images, "photo": photo, "top": top, "left": left, "hue": hue}


def generate(items: np.ndarray, options: Options, split: str) -> dict[str, np.ndarray]:
    """Composite uint8 Fashion-MNIST items `[N, 28, 28(, 1)]` (module docstring; `composite`'s
    output). Item i's draws depend only on (seed, split, i), so the first k items of N are those of
    any longer run."""
    n = np.asarray(items).reshape(-1, 28, 28).shape[0]
    # one row of uniforms per item: [photo, top, left, hue]
    u = np.random.default_rng([options.seed, _SPLIT_STREAMS[split]]).random((n, 4))
    return composite(items, u, options)


# --------------------------------------------------------------------------------------------------
# Cache


def cache_path(folder: str, split: str, options: Options, idx_path: str) -> str:
    """`folder/color_fashion_mnist_{split}_{size}px_{hash}.npz`; the hash covers `VERSION`, the
    options and the IDX images file (path, size, mtime)."""
    stat = os.stat(idx_path)
    key = {
        "version": VERSION,
        "split": split,
        "options": dataclasses.asdict(options),
        "idx": [os.path.abspath(idx_path), stat.st_size, stat.st_mtime_ns],
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    return os.path.join(folder, f"{NAME}_{split}_{options.size}px_{digest}.npz")


def load(
    items: np.ndarray, labels: np.ndarray, split: str, options: Options, folder: str, idx_path: str
) -> dict[str, np.ndarray]:
    """The generated split (plus `'label'`): read from the cache, or generated and written there
    atomically (tmp file + rename)."""
    path = cache_path(folder, split, options, idx_path)
    if os.path.isfile(path):
        with np.load(path) as f:
            return {k: f[k] for k in f.files}
    out = {**generate(items, options, split), "label": np.asarray(labels, np.int32)}
    os.makedirs(folder, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        np.savez(f, **out)
    os.replace(tmp, path)
    return out


# --------------------------------------------------------------------------------------------------
# Picture


def save_grid(images: np.ndarray, labels: np.ndarray, path: str, names: Mapping[int, str]) -> None:
    """8-column grid of uint8 `[N, H, W, 3]` images titled with their class names, as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 8
    rows = -(-len(images) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(cols * 1.1, rows * 1.25))
    for ax, k in zip(axes.ravel(), range(rows * cols)):
        ax.axis("off")
        if k < len(images):
            ax.imshow(images[k], interpolation="nearest")
            ax.set_title(names.get(int(labels[k]), str(labels[k])), fontsize=6, pad=2)
    fig.tight_layout(pad=0.3)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grid", required=True, help="PNG to write (8 × 8 test items)")
    parser.add_argument("--data_dir", default="", help="Fashion-MNIST IDX folder")
    parser.add_argument("--split", default="test", choices=tuple(_SPLIT_STREAMS))
    parser.add_argument("--num", type=int, default=64)
    for key in ("size", "seed", "tint", "hue", "background_crop", "cache_dir"):
        parser.add_argument(f"--{key}", type=type(DEFAULTS[key]), default=DEFAULTS[key])
    args = parser.parse_args(argv)
    folder = args.data_dir or fashion_mnist.FASHION_MNIST_DIR
    images_path, labels_path = fashion_mnist.split_paths(folder, args.split, NAME)
    items, labels = fashion_mnist.read_split(images_path, labels_path)
    options = check_config(
        {k: getattr(args, k) for k in ("size", "seed", "tint", "hue", "background_crop")}
    )
    out = load(
        items, labels, args.split, options, cache_dir({"cache_dir": args.cache_dir}), images_path
    )
    names = dict(enumerate(fashion_mnist.CLASSES))
    save_grid(out["image"][: args.num], out["label"][: args.num], args.grid, names)
    print(f"wrote {args.grid}")


if __name__ == "__main__":
    main()
