"""The detection set of the CPU study: Fashion-MNIST items pasted on canvases, boxes from their masks.

Each canvas (`CANVAS` px square, grey, black background like the items') holds 2-5 items of
the split it is made from (train canvases from the train split's items, test canvases from the test
split's), each resized to a side drawn log-uniformly in `SIZES` px (the 28-px items at ×0.7 to
×2.3) and placed where it covers at most `MAX_OVERLAP` of a smaller item's box or is covered by as
much; overlapping pixels take the brighter item. An item's box is the tight box of its own mask
(resized pixels > `MASK_LEVEL`); its category id is its Fashion-MNIST class + 1 (COCO's ids start at 1). Written once, on first
use, as PNG files and one COCO json per split (`annotations/<split>.json`, boxes XYWH in pixels),
deterministically (fixed seeds, `VERSION` in the folder's name), into a folder renamed into place
whole, so two processes that start together both see a complete set.

No Detectron2 here: `ssl_jax.detection.train_net` registers the set in its `DatasetCatalog`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import numpy as np

from ssl_jax.data.sources import fashion_mnist

NAME = "fashion_mnist_det"
VERSION = 1
CANVAS = 128
SIZES = (20, 64)
ITEMS_PER_CANVAS = (2, 5)
MAX_OVERLAP = 0.2
MASK_LEVEL = 25
SPLITS = {"train": ("train", 2000, 0), "test": ("test", 300, 1)}  # canvases, items' split, seed
DATA_ENV = "SSL_JAX_DETECTION_DATA"


def default_root() -> str:
    """Where the set is written: `$SSL_JAX_DETECTION_DATA`, else `~/.cache/ssl_jax/detection`."""
    base = os.environ.get(DATA_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ssl_jax", "detection"
    )
    return os.path.join(base, f"{NAME}-v{VERSION}")


def _resize(item: np.ndarray, size: int) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.fromarray(item).resize((size, size), Image.BILINEAR))


def _mask_box(mask: np.ndarray) -> tuple[int, int, int, int] | None:
    """(x0, y0, x1, y1) of a boolean mask, pixel edges (x1, y1 exclusive); None when empty."""
    ys, xs = np.nonzero(mask)
    if not len(xs):
        return None
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


def _overlap(a, b) -> float:
    """Intersection of boxes a and b over the smaller one's area."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return w * h / smaller


def make_canvas(
    rng: np.random.Generator, items: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, list[dict]]:
    """One canvas, uint8 `[CANVAS, CANVAS]`, and its objects `[{'bbox': [x, y, w, h],
    'category_id': class, 'item': index}]`, items drawn from `items` `[N, 28, 28]`."""
    canvas = np.zeros((CANVAS, CANVAS), np.uint8)
    objects, boxes = [], []
    wanted = int(rng.integers(ITEMS_PER_CANVAS[0], ITEMS_PER_CANVAS[1] + 1))
    log_lo, log_hi = np.log(SIZES[0]), np.log(SIZES[1])
    for _ in range(20 * wanted):
        if len(objects) == wanted:
            break
        index = int(rng.integers(len(items)))
        size = int(round(np.exp(rng.uniform(log_lo, log_hi))))
        x, y = (int(v) for v in rng.integers(0, CANVAS - size + 1, size=2))
        pixels = _resize(items[index], size)
        box = _mask_box(pixels > MASK_LEVEL)
        if box is None:
            continue
        box = (box[0] + x, box[1] + y, box[2] + x, box[3] + y)
        if any(_overlap(box, other) > MAX_OVERLAP for other in boxes):
            continue
        region = canvas[y : y + size, x : x + size]
        np.maximum(region, pixels, out=region)
        boxes.append(box)
        objects.append(
            {
                "bbox": [box[0], box[1], box[2] - box[0], box[3] - box[1]],
                "category_id": int(labels[index]) + 1,
                "item": index,
            }
        )
    return canvas, objects


def _write_split(root: str, split: str, data_dir: str) -> None:
    from PIL import Image

    source, count, seed = SPLITS[split]
    items, labels = fashion_mnist.read_split(*fashion_mnist.split_paths(data_dir, source))
    items = items[..., 0]
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.join(root, split), exist_ok=True)
    images, annotations = [], []
    for image_id in range(count):
        canvas, objects = make_canvas(rng, items, labels)
        file_name = f"{split}/{image_id:05d}.png"
        Image.fromarray(canvas).save(os.path.join(root, file_name))
        images.append({"id": image_id, "file_name": file_name, "width": CANVAS, "height": CANVAS})
        for obj in objects:
            x, y, w, h = obj["bbox"]
            annotations.append(
                {
                    "id": len(annotations) + 1,
                    "image_id": image_id,
                    "category_id": obj["category_id"],
                    "bbox": [x, y, w, h],
                    "area": w * h,
                    "iscrowd": 0,
                    "fashion_mnist_index": obj["item"],
                }
            )
    categories = [{"id": i + 1, "name": name} for i, name in enumerate(fashion_mnist.CLASSES)]
    coco = {
        "info": {
            "description": f"{NAME} v{VERSION}: Fashion-MNIST {source} items on {CANVAS}-px "
            f"canvases (ssl_jax.detection.data)"
        },
        "images": images,
        "annotations": annotations,
        "categories": categories,
    }
    os.makedirs(os.path.join(root, "annotations"), exist_ok=True)
    with open(annotation_path(root, split), "w") as f:
        json.dump(coco, f)


def annotation_path(root: str, split: str) -> str:
    return os.path.join(root, "annotations", f"{split}.json")


def ensure(root: str | None = None, data_dir: str = fashion_mnist.FASHION_MNIST_DIR) -> str:
    """The set's folder, written first when it is not there (a few seconds); returns `root`."""
    root = root or default_root()
    if all(os.path.isfile(annotation_path(root, s)) for s in SPLITS):
        return root
    parent = os.path.dirname(os.path.abspath(root))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(root)}.", dir=parent)
    try:
        print(f"writing the detection set {NAME} v{VERSION} to {root} (once)", flush=True)
        for split in SPLITS:
            _write_split(tmp, split, data_dir)
        try:
            os.rename(tmp, root)
        except OSError:  # another process wrote it first
            if not os.path.isfile(annotation_path(root, "test")):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root
