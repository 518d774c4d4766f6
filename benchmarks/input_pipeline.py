"""Host augmentation throughput of the MoCo v2 recipe: views/s and views per CPU-second (per core).

Usage: python benchmarks/input_pipeline.py [--parallel N] [--views V] [--sizes 32,224]
           [--source synthetic|fashion_mnist] [--split auto|crop|all] [--seconds S]
           [--host-ops-only]

Images are held in memory, so decoding is not timed. `synthetic` (default): smooth random colour
images (8 × 8 uniform noise upsampled bicubically), 32 × 32 for the 32-px recipe and 256 × 320 (a
typical ImageNet image) for the 224-px one; `fashion_mnist`: Fashion-MNIST items, gray copied to 3
channels and upsampled to the same source sizes.

The timed path is the one `pipeline.train_iterator` runs: per example, one stateless draw per view
and the per-image part of the recipe (`augment.apply_prefix`), a parallel deterministic map; then
`batch`; then the rest of the recipe on the whole batch (`augment.apply_ops_uint8`). `--split auto`
splits where the pipeline does (`augment.split_point`: everything batched for small fixed-size
sources, everything per image otherwise); `crop` runs the crop per image and the rest batched, `all`
everything per image.

views/s is wall-clock; views/cpu-s is views per second of process CPU time (all threads), i.e.
views/s per fully used core: the figure to compare on a shared machine, where wall-clock rates
depend on what else runs.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from ssl_jax.data import recipe_ops, recipes  # noqa: E402
from ssl_jax.data.host import augment  # noqa: E402

SOURCE_SIZE = {32: (32, 32), 224: (256, 320)}
_plain = tf.autograph.experimental.do_not_convert


def synthetic_images(n: int, hw: tuple[int, int], seed: int = 0) -> np.ndarray:
    """Smooth random colour images: 8 × 8 noise upsampled bicubically, uint8 `[n, h, w, 3]`."""
    rng = np.random.default_rng(seed)
    low = rng.uniform(0, 255, (n, 8, 8, 3)).astype(np.float32)
    images = tf.image.resize(low, hw, method="bicubic").numpy()
    return np.clip(np.round(images), 0, 255).astype(np.uint8)


def fashion_images(n: int, hw: tuple[int, int]) -> np.ndarray:
    from ssl_jax.data import datasets
    from ssl_jax.data.sources import fashion_mnist

    images, _ = fashion_mnist.read_split(*datasets._fashion_paths({}, "train"))
    images = np.repeat(images[:n], 3, axis=-1).astype(np.float32)
    return np.clip(np.round(tf.image.resize(images, hw).numpy()), 0, 255).astype(np.uint8)


def build(images: np.ndarray, recipe, parallel: int, num_views: int, batch: int, split: str):
    """The pipeline's two stages over in-memory images; `split`: 'auto' (the pipeline's choice,
    `augment.split_point`), 'crop' (per image up to the crop, the rest per batch), 'all' (per
    image)."""
    images_t = tf.constant(images)
    n = images.shape[0]
    k = {
        "auto": augment.split_point(recipe, images.shape[1:]),
        "crop": 1 + max(i for i, op in enumerate(recipe) if op["op"] in recipe_ops.SIZE_OPS),
        "all": len(recipe),
    }[split]

    @_plain
    def per_example(i):
        image = tf.gather(images_t, i % n)
        out = []
        for v in range(num_views):
            u = augment.draw(recipe, tf.stack([i, tf.constant(v, tf.int64)]))
            out.append((augment.apply_prefix(image, recipe, u, k), u))
        return tuple(out)

    @_plain
    def per_batch(*views):
        return tuple(augment.apply_ops_uint8(x, recipe, u, k) for x, u in views)

    ds = tf.data.Dataset.range(2**62).map(
        per_example, num_parallel_calls=parallel, deterministic=True
    )
    ds = ds.batch(batch, drop_remainder=True)
    ds = ds.map(per_batch, num_parallel_calls=parallel, deterministic=True)
    return ds.prefetch(2), k


def throughput(
    images: np.ndarray,
    recipe,
    parallel: int,
    num_views: int,
    batch: int = 64,
    seconds: float = 10.0,
    split: str = "auto",
) -> tuple[float, float, int]:
    """(views per wall second, views per CPU second, ops run per image) over about `seconds`,
    after two warm-up batches."""
    ds, k = build(images, recipe, parallel, num_views, batch, split)
    it = iter(ds)
    next(it), next(it)  # tracing, thread pools
    wall, cpu = time.perf_counter(), time.process_time()
    count = 0
    while time.perf_counter() - wall < seconds:
        next(it)
        count += batch * num_views
    return count / (time.perf_counter() - wall), count / (time.process_time() - cpu), k


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--views", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--sizes", default="32,224")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--source", choices=("synthetic", "fashion_mnist"), default="synthetic")
    parser.add_argument(
        "--split",
        choices=("auto", "crop", "all"),
        default="auto",
        help="ops run per image before batching: the pipeline's choice, up to the crop, or all",
    )
    parser.add_argument(
        "--host-ops-only",
        action="store_true",
        help="only the geometric ops (recipe_ops.HOST_OPS), as with config.data.device_ops",
    )
    args = parser.parse_args()
    print(
        f"MoCo v2 recipe, {args.source} images, {args.views} views/example, batch {args.batch}, "
        f"num_parallel_calls={args.parallel}, {os.cpu_count()} CPU cores, --split {args.split}"
        + (", host ops only" if args.host_ops_only else "")
    )
    for size in (int(s) for s in args.sizes.split(",")):
        hw = SOURCE_SIZE.get(size, (size, size))
        make = synthetic_images if args.source == "synthetic" else fashion_images
        images = make(1024 if size <= 64 else 128, hw)
        recipe = recipes.mocov2(size)
        if args.host_ops_only:
            recipe = tuple(op for op in recipe if op["op"] in recipe_ops.HOST_OPS)
        rate, per_cpu, k = throughput(
            images, recipe, args.parallel, args.views, args.batch, args.seconds, args.split
        )
        print(
            f"  {size:4d} px (source {hw[0]}x{hw[1]}, {k}/{len(recipe)} ops per image): "
            f"{rate:8.1f} views/s, {per_cpu:8.1f} views/cpu-s"
        )


if __name__ == "__main__":
    main()
