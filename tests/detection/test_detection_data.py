"""The CPU study's detection set: boxes are the items' mask bounds, the splits' items stay apart,
the set is written once and deterministically, and reads back as valid COCO."""

import json
import os

import numpy as np
import pytest

from ssl_jax.data.sources import fashion_mnist
from ssl_jax.detection import data


def _items(n=50, seed=0):
    """Items like Fashion-MNIST's: a bright blob of random size on black, 28 x 28."""
    rng = np.random.default_rng(seed)
    items = np.zeros((n, 28, 28), np.uint8)
    for i in range(n):
        h, w = rng.integers(6, 28, size=2)
        y, x = rng.integers(0, 28 - h + 1), rng.integers(0, 28 - w + 1)
        items[i, y : y + h, x : x + w] = rng.integers(120, 256)
    return items, rng.integers(0, 10, size=n).astype(np.int32)


def test_boxes_are_the_mask_bounds_of_each_pasted_item():
    items, labels = _items()
    rng = np.random.default_rng(3)
    for _ in range(20):
        canvas, objects = data.make_canvas(rng, items, labels)
        assert canvas.shape == (data.CANVAS, data.CANVAS) and canvas.dtype == np.uint8
        lo, hi = data.ITEMS_PER_CANVAS
        assert lo <= len(objects) <= hi
        for obj in objects:
            x, y, w, h = obj["bbox"]
            assert 0 <= x and 0 <= y and x + w <= data.CANVAS and y + h <= data.CANVAS
            assert obj["category_id"] == labels[obj["item"]] + 1
            # the item's pixels are inside its box and reach all four of its edges
            inside = canvas[y : y + h, x : x + w] > data.MASK_LEVEL
            assert (
                inside[0].any() and inside[-1].any() and inside[:, 0].any() and inside[:, -1].any()
            )
            # the resized item spans between SIZES (its box can be smaller than its square)
            assert max(w, h) <= data.SIZES[1]
        boxes = [o["bbox"] for o in objects]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                to_xyxy = lambda r: (r[0], r[1], r[0] + r[2], r[1] + r[3])
                assert data._overlap(to_xyxy(a), to_xyxy(b)) <= data.MAX_OVERLAP


def test_overlap_is_intersection_over_the_smaller_box():
    assert data._overlap((0, 0, 10, 10), (5, 5, 25, 25)) == pytest.approx(25 / 100)
    assert data._overlap((0, 0, 10, 10), (10, 0, 20, 10)) == 0.0
    assert data._overlap((0, 0, 10, 10), (2, 2, 4, 4)) == 1.0


@pytest.mark.skipif(
    not os.path.isfile(os.path.join(fashion_mnist.FASHION_MNIST_DIR, "t10k-images-idx3-ubyte.gz")),
    reason="Fashion-MNIST not installed (apt-get install dataset-fashion-mnist)",
)
def test_the_set_is_written_once_deterministically_as_coco(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "SPLITS", {"train": ("train", 12, 0), "test": ("test", 6, 1)})
    root = data.ensure(str(tmp_path / "a"))
    again = data.ensure(str(tmp_path / "b"))
    for split, (source, count, _) in data.SPLITS.items():
        coco = json.load(open(data.annotation_path(root, split)))
        assert coco == json.load(open(data.annotation_path(again, split)))
        assert len(coco["images"]) == count
        assert [c["id"] for c in coco["categories"]] == list(range(1, 11))
        _, labels = fashion_mnist.read_split(
            *fashion_mnist.split_paths(fashion_mnist.FASHION_MNIST_DIR, source)
        )
        for ann in coco["annotations"]:
            # each object names its item of its own split, and carries that item's class
            assert ann["category_id"] == labels[ann["fashion_mnist_index"]] + 1
            assert ann["area"] == ann["bbox"][2] * ann["bbox"][3] and ann["iscrowd"] == 0
        for image in coco["images"]:
            a = open(os.path.join(root, image["file_name"]), "rb").read()
            assert a == open(os.path.join(again, image["file_name"]), "rb").read()
    # written once: a second call reads what is there
    stamp = os.path.getmtime(data.annotation_path(root, "train"))
    assert (
        data.ensure(root) == root and os.path.getmtime(data.annotation_path(root, "train")) == stamp
    )
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]  # no temporary folder left
