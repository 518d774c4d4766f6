"""Host augmentation throughput of the MoCo v2 recipe (views/s and views/s per core).

Usage: python benchmarks/input_pipeline.py [--parallel N] [--views V] [--sizes 32,224] [--source S]

Images are synthetic (smooth random uint8 images, generated once and held in memory, so no decoding is
measured): 32 × 32 for the 32-px recipe and 320 × 256 (a typical ImageNet image) for the 224-px recipe.
`--source fashion_mnist` uses Fashion-MNIST digits instead (gray expanded to 3 channels, upsampled to
the source size). The timed path is the one `pipeline.train_iterator` runs per example: `apply_recipe`
of `recipes.mocov2(size)` inside a parallel, deterministic `tf.data` map, then `batch`. Per core =
total / min(parallel calls, CPU cores).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from ssl_jax.data import augment, recipes  # noqa: E402

SOURCE_SIZE = {32: (32, 32), 224: (256, 320)}


def synthetic_images(n: int, hw: tuple[int, int], seed: int = 0) -> np.ndarray:
    """Smooth random colour images: 8 × 8 noise upsampled bicubically, uint8 `[n, h, w, 3]`."""
    rng = np.random.default_rng(seed)
    low = rng.uniform(0, 255, (n, 8, 8, 3)).astype(np.float32)
    images = tf.image.resize(low, hw, method="bicubic").numpy()
    return np.clip(np.round(images), 0, 255).astype(np.uint8)


def fashion_images(n: int, hw: tuple[int, int]) -> np.ndarray:
    from ssl_jax.data import datasets

    images, _ = datasets._fashion_arrays(*datasets._fashion_paths({}, "train"))
    images = np.repeat(images[:n], 3, axis=-1).astype(np.float32)
    return np.clip(np.round(tf.image.resize(images, hw).numpy()), 0, 255).astype(np.uint8)


def throughput(
    images: np.ndarray, recipe, parallel: int, num_views: int, batch: int = 64, repeat: int = 2
) -> float:
    """Views per second of `apply_recipe` over `images`, `repeat` passes after a warm-up batch."""
    images_t = tf.constant(images)
    n = images.shape[0]

    @tf.autograph.experimental.do_not_convert
    def views(i):
        image = tf.gather(images_t, i % n)
        return tuple(
            augment.apply_recipe(image, recipe, tf.stack([i, tf.constant(v, tf.int64)]))
            for v in range(num_views)
        )

    total = n * repeat
    ds = tf.data.Dataset.range(total + batch)
    ds = ds.map(views, num_parallel_calls=parallel, deterministic=True).batch(batch).prefetch(2)
    it = iter(ds)
    next(it)  # warm-up: tracing, thread pools
    start = time.perf_counter()
    count = 0
    for out in it:
        count += out[0].shape[0] * num_views
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--views", type=int, default=2)
    parser.add_argument("--sizes", default="32,224")
    parser.add_argument("--source", choices=("synthetic", "fashion_mnist"), default="synthetic")
    parser.add_argument("--images", type=int, default=0, help="distinct images (default per size)")
    args = parser.parse_args()
    cores = min(args.parallel, os.cpu_count() or 1)
    print(
        f"MoCo v2 recipe, {args.source} images, {args.views} views/example, "
        f"num_parallel_calls={args.parallel}, {os.cpu_count()} CPU cores"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        hw = SOURCE_SIZE.get(size, (size, size))
        n = args.images or (2048 if size <= 64 else 256)
        make = synthetic_images if args.source == "synthetic" else fashion_images
        images = make(n, hw)
        rate = throughput(images, recipes.mocov2(size), args.parallel, args.views)
        print(
            f"  {size:4d} px (source {hw[0]}x{hw[1]}): {rate:9.1f} views/s, "
            f"{rate / cores:9.1f} views/s/core"
        )


if __name__ == "__main__":
    main()
