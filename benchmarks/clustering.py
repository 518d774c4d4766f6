"""Seconds per call of InterCLR's cluster maintenance (`ssl_jax.methods.negatives.clustering`) on a sharded bank.

    python benchmarks/clustering.py --devices=8 [--rows=1281167] [--clusters=10000] [--dim=128]
        [--iters=20] [--repeats=1]

Bank `[N, D]` float32 of L2-normalised random rows (a blob mixture, so clusters have varied sizes)
sharded `P('data', None)` over `--devices` devices (`--devices=n` on a CPU host sets
`XLA_FLAGS=--xla_force_host_platform_device_count=n` before jax is imported); N is rounded down to a
multiple of the device count (ImageNet's 1,281,167 → 1,281,160 on 8). Times:
- `kmeans` (`--iters` Lloyd iterations + final assignment + empty-cluster fix),
- `fix_small_clusters` as a no-op (min_size=1 on the k-means labels: no empty cluster → one segment
  count),
- `fix_small_clusters` triggered: min_size=20 on the k-means labels (the code's setting; the number of
  small clusters is printed), and `--forced` clusters emptied by moving their rows into cluster
  `--forced` (min_size=1: `--forced` splits of the largest cluster, no reassignment pass).
Each entry: compile + one warm-up call, then the median of `--repeats` calls (`block_until_ready`).
"""

from __future__ import annotations

import argparse
import time

from benchmarks._common import simulate_devices

IMAGENET_TRAIN = 1_281_167


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--rows", type=int, default=IMAGENET_TRAIN)
    parser.add_argument("--clusters", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--forced", type=int, default=8, help="clusters emptied for the forced fix")
    parser.add_argument("--repeats", type=int, default=1)
    return parser.parse_args()


def timed_s(f, *args, repeats: int) -> tuple[float, float, object]:
    """(compile + first call seconds, median seconds of `repeats` warm calls, last output)."""
    import jax
    import numpy as np

    t = time.perf_counter()
    out = jax.block_until_ready(f(*args))
    first = time.perf_counter() - t
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t)
    return first, float(np.median(times)), out


def main() -> None:
    args = parse_args()
    simulate_devices(args.devices)  # also when XLA_FLAGS already holds other flags
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding

    from ssl_jax.methods import memory
    from ssl_jax.methods.negatives import clustering
    from ssl_jax.parallel.sharding import make_mesh

    devices = jax.devices()[: args.devices]
    mesh = make_mesh(devices)
    rows = args.rows - args.rows % len(devices)
    clusters, dim = args.clusters, args.dim
    print(
        f"{jax.default_backend()} x{len(devices)}: N={rows:,} D={dim} C={clusters:,} "
        f"iters={args.iters}"
    )

    def make_bank(rng):
        which, noise, centers = jax.random.split(rng, 3)
        centers = jax.random.normal(centers, (clusters, dim))
        blob = jax.random.randint(which, (rows,), 0, clusters)
        return memory.l2_normalize(centers[blob] + jax.random.normal(noise, (rows, dim)))

    bank = jax.jit(make_bank, out_shardings=NamedSharding(mesh, memory.ROWS))(jax.random.PRNGKey(0))
    rng = jax.random.PRNGKey(1)

    kmeans = jax.jit(lambda r, b: clustering.kmeans(r, b, clusters, mesh, iters=args.iters))
    first, warm, (labels, centroids) = timed_s(kmeans, rng, bank, repeats=args.repeats)
    sizes = clustering.cluster_sizes(labels, clusters, mesh)
    print(
        f"kmeans ({args.iters} it)                 : {warm:8.3f} s  (compile + 1st {first:.1f} s; "
        f"sizes min {int(sizes.min())} max {int(sizes.max())})"
    )

    def fix(min_size):
        return jax.jit(
            lambda b, lab, c: clustering.fix_small_clusters(b, lab, c, mesh, min_size=min_size)
        )

    first, warm, _ = timed_s(fix(1), bank, labels, centroids, repeats=args.repeats)
    print(f"fix_small_clusters no-op        : {warm * 1e3:8.1f} ms (compile + 1st {first:.1f} s)")

    fix20 = fix(20)
    first, warm, (_, _, stats) = timed_s(fix20, bank, labels, centroids, repeats=args.repeats)
    stats = {k: int(v) for k, v in stats.items()}
    print(
        f"fix_small_clusters min_size=20  : {warm * 1e3:8.1f} ms (compile + 1st {first:.1f} s; "
        f"{stats})"
    )

    emptied = jax.jit(
        lambda lab: jnp.where(lab < args.forced, args.forced, lab),
        out_shardings=NamedSharding(mesh, clustering.LABELS),
    )(labels)
    first, warm, (_, _, stats) = timed_s(fix(1), bank, emptied, centroids, repeats=args.repeats)
    stats = {k: int(v) for k, v in stats.items()}
    print(
        f"fix_small_clusters {args.forced} emptied  : {warm * 1e3:8.1f} ms "
        f"(compile + 1st {first:.1f} s; {stats})"
    )


if __name__ == "__main__":
    main()
