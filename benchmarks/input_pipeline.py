"""Host augmentation throughput of the MoCo v2 recipe: views/s and views per CPU-second (per core).

Usage: python benchmarks/input_pipeline.py [--parallel N] [--views V] [--sizes 32,224]
                                           [--source synthetic|fashion_mnist] [--per-image]

Images are held in memory, so decoding is not timed. `synthetic` (default): smooth random colour
images (8 × 8 uniform noise upsampled bicubically), 32 × 32 for the 32-px recipe and 256 × 320 (a
typical ImageNet image) for the 224-px one; `fashion_mnist`: Fashion-MNIST items, gray copied to 3
channels and upsampled to the same source sizes.

The timed path is the one `pipeline.train_iterator` runs: per example, one stateless draw per view
and the per-image prefix of the recipe (`augment.split_point`: the random resized crop when the
source is large or variable-size, nothing for small fixed-size sources); `batch`; then the rest of
the recipe on the whole batch (`augment.apply_ops`) and uint8. `--per-image` instead runs
`augment.apply_recipe` on every image inside the per-example map (the batch-of-one path, i.e. the
pre-batching design).

views/s is wall-clock; views/cpu-s is views per second of process CPU time (all threads), i.e.
views/s per fully used core. It is the figure to compare on a shared machine, where wall-clock rates
depend on what else runs.
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
_plain = tf.autograph.experimental.do_not_convert


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


def build(images: np.ndarray, recipe, parallel: int, num_views: int, batch: int, per_image: bool):
    images_t = tf.constant(images)
    n = images.shape[0]
    split = augment.split_point(recipe, images.shape[1:])

    @_plain
    def per_example(i):
        image = tf.gather(images_t, i % n)
        if per_image:
            return tuple(
                augment.apply_recipe(image, recipe, tf.stack([i, tf.constant(v, tf.int64)]))
                for v in range(num_views)
            )
        out = []
        for v in range(num_views):
            u = augment.draw(recipe, tf.stack([i, tf.constant(v, tf.int64)]))
            x = augment.apply_ops(image[None], recipe, u[None], 0, split)[0] if split else image
            out.append((x, u))
        return tuple(out)

    @_plain
    def per_batch(*views):
        return tuple(augment.apply_ops_uint8(x, recipe, u, split) for x, u in views)

    ds = tf.data.Dataset.range(2**62).map(
        per_example, num_parallel_calls=parallel, deterministic=True
    )
    ds = ds.batch(batch, drop_remainder=True)
    if not per_image:
        ds = ds.map(per_batch, num_parallel_calls=parallel, deterministic=True)
    return ds.prefetch(2)


def throughput(
    images: np.ndarray,
    recipe,
    parallel: int,
    num_views: int,
    batch: int = 64,
    seconds: float = 10.0,
    per_image: bool = False,
) -> tuple[float, float]:
    """(views per wall second, views per CPU second) over about `seconds`, after two warm-up
    batches."""
    it = iter(build(images, recipe, parallel, num_views, batch, per_image))
    next(it), next(it)  # tracing, thread pools
    wall, cpu = time.perf_counter(), time.process_time()
    count = 0
    while time.perf_counter() - wall < seconds:
        next(it)
        count += batch * num_views
    return count / (time.perf_counter() - wall), count / (time.process_time() - cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parallel", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--views", type=int, default=2)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--sizes", default="32,224")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--source", choices=("synthetic", "fashion_mnist"), default="synthetic")
    parser.add_argument(
        "--per-image", action="store_true", help="apply_recipe per image (old path)"
    )
    args = parser.parse_args()
    print(
        f"MoCo v2 recipe, {args.source} images, {args.views} views/example, batch {args.batch}, "
        f"num_parallel_calls={args.parallel}, {os.cpu_count()} CPU cores, "
        f"{'per-image' if args.per_image else 'batched'} path"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        hw = SOURCE_SIZE.get(size, (size, size))
        make = synthetic_images if args.source == "synthetic" else fashion_images
        images = make(1024 if size <= 64 else 128, hw)
        rate, per_cpu = throughput(
            images,
            recipes.mocov2(size),
            args.parallel,
            args.views,
            args.batch,
            args.seconds,
            args.per_image,
        )
        print(
            f"  {size:4d} px (source {hw[0]}x{hw[1]}): {rate:8.1f} views/s, "
            f"{per_cpu:8.1f} views/cpu-s"
        )


if __name__ == "__main__":
    main()
