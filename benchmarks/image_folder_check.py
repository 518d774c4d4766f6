"""Seconds the image_folder check (`datasets.unreadable_images`) costs: first open and cached open.

    python benchmarks/image_folder_check.py [--files=100000] [--size=32] [--formats=png,jpeg]
        [--dir=DIR] [--keep]

Per format, writes `--files` random `--size`-px RGB images into class folders of 1,000 (in a new
temporary folder under `--dir`, default the system's), then times `datasets.num_examples` of the
folder, which lists it and checks every file:
- `listing`: the folder's listing alone (`os.walk`, sorted),
- `first open`: listing + every file decoded by tf (threads) + the cache file written,
- `cached open`: a new process's open of the unchanged folder (in-process caches cleared): listing
  + one `stat` per file + the cache file read.
TensorFlow is imported before the timings (its import is printed on its own). The images are
deleted at the end unless `--keep`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FORMATS = {"png": ("PNG", "png"), "jpeg": ("JPEG", "jpg")}
PER_CLASS = 1000


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--formats", default="png,jpeg", help=f"of {sorted(FORMATS)}")
    parser.add_argument("--dir", default=None, help="where the temporary folders are made")
    parser.add_argument("--keep", action="store_true", help="keep the generated images")
    return parser.parse_args()


def write_images(folder: str, count: int, size: int, fmt: str) -> None:
    """`count` random RGB images in class folders of `PER_CLASS`."""
    import numpy as np
    from PIL import Image

    pil_format, ext = FORMATS[fmt]
    rng = np.random.default_rng(0)
    for i in range(count):
        sub = os.path.join(folder, f"class{i // PER_CLASS:04d}")
        if i % PER_CLASS == 0:
            os.makedirs(sub)
        pixels = rng.integers(0, 256, (size, size, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(os.path.join(sub, f"{i:07d}.{ext}"), pil_format)


def timed(f, *args) -> tuple[float, object]:
    """`(seconds, f(*args))`."""
    start = time.perf_counter()
    out = f(*args)
    return time.perf_counter() - start, out


def measure(folder: str, fmt: str, args: argparse.Namespace) -> None:
    """Write one format's images into `folder` and print the three timings."""
    import ml_collections

    from ssl_jax.data import datasets

    seconds, _ = timed(write_images, folder, args.files, args.size, fmt)
    print(f"{fmt}: wrote {args.files} {args.size}-px images in {seconds:.1f} s ({folder})")
    data = ml_collections.ConfigDict(dict(name="image_folder", data_dir=folder))
    listing, _ = timed(datasets._list_folder, folder)
    datasets.clear_cache()
    first, n = timed(datasets.num_examples, data, "train")
    datasets.clear_cache()  # what a new process keeps: the cache file
    cached, n_again = timed(datasets.num_examples, data, "train")
    datasets.clear_cache()
    assert n == n_again == args.files, (n, n_again)
    cache_mb = os.path.getsize(os.path.join(folder, datasets.CHECK_FILE)) / 2**20
    per_file = 1e6 / args.files
    print(
        f"{fmt}: listing {listing:.2f} s | first open {first:.2f} s "
        f"({first * per_file:.0f} µs/file) | cached open {cached:.2f} s "
        f"({cached * per_file:.1f} µs/file) | cache file {cache_mb:.1f} MiB"
    )


def main() -> None:
    args = parse_args()
    seconds, _ = timed(__import__, "tensorflow")
    print(f"import tensorflow: {seconds:.1f} s ({os.cpu_count()} CPUs)")
    for fmt in args.formats.split(","):
        folder = tempfile.mkdtemp(prefix=f"image_folder_check_{fmt}_", dir=args.dir)
        try:
            measure(folder, fmt, args)
        finally:
            if not args.keep:
                shutil.rmtree(folder)


if __name__ == "__main__":
    main()
