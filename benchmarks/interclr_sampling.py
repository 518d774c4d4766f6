"""ms per call of InterCLR's samplers (`ssl_jax.methods.negatives.sampling`) at ImageNet scale on a sharded bank.

    python benchmarks/interclr_sampling.py --devices=8 [--rows=1281167] [--num=16384]
        [--pool=128000] [--batch=256] [--clusters=10000] [--repeats=3] [--samplers=...]

Bank `[N, 128]` float32 sharded `P('data', None)` over `--devices` devices (`--devices=8` on a CPU host
sets `XLA_FLAGS=--xla_force_host_platform_device_count=8` before jax is imported), N padded up to a
multiple of the device count; labels `[N]` int32 uniform over `--clusters` sharded `P('data')`; B
replicated L2-normalised queries. Times `inter_negatives` for each sampler (official defaults: num =
16384 negatives, pool = 128000) and `cluster_positive`: compile + one warm-up call, then the median of
`--repeats` calls, each ended by `block_until_ready`.
"""

from __future__ import annotations

import argparse
import os
import time

from benchmarks._common import simulate_devices


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--rows", type=int, default=1_281_167)
    parser.add_argument("--num", type=int, default=16_384)
    parser.add_argument("--pool", type=int, default=128_000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--clusters", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--samplers", default="semihard,hard,random,semieasy,positive")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    simulate_devices(args.devices)

    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from ssl_jax.methods import memory
    from ssl_jax.methods.negatives import sampling
    from ssl_jax.parallel.sharding import DATA_AXIS, make_mesh

    if jax.device_count() < args.devices:
        raise SystemExit(f"asked for {args.devices} devices, have {jax.device_count()}")
    mesh = make_mesh(jax.devices()[: args.devices])
    num_rows = -(-args.rows // args.devices) * args.devices
    dim, batch = 128, args.batch
    print(
        f"devices: {args.devices} × {jax.devices()[0].device_kind} ({os.cpu_count()} host cores); "
        f"bank {num_rows:,} × {dim} float32, {args.clusters:,} clusters; B = {batch}; "
        f"num = {args.num:,}, pool = {args.pool:,}; median of {args.repeats} calls",
        flush=True,
    )
    bank = memory.init_rows(jax.random.PRNGKey(0), num_rows, dim, mesh)
    labels = jax.jit(
        lambda r: jax.random.randint(r, (num_rows,), 0, args.clusters, jnp.int32),
        out_shardings=NamedSharding(mesh, P(DATA_AXIS)),
    )(jax.random.PRNGKey(1))
    queries = memory.l2_normalize(jax.random.normal(jax.random.PRNGKey(2), (batch, dim)))
    query_labels = jax.random.randint(jax.random.PRNGKey(3), (batch,), 0, args.clusters)
    rng = jax.random.PRNGKey(4)

    rows = []
    for name in args.samplers.split(","):
        if name == "positive":
            f = jax.jit(lambda r, lb, ql: sampling.cluster_positive(r, lb, ql, mesh))
            call = lambda f=f: f(rng, labels, query_labels)  # noqa: E731
        else:
            f = jax.jit(
                lambda r, bk, lb, q, ql, name=name: sampling.inter_negatives(
                    r, name, bk, lb, q, ql, args.num, args.pool, mesh
                )
            )
            call = lambda f=f: f(rng, bank, labels, queries, query_labels)  # noqa: E731
        t = time.perf_counter()
        jax.block_until_ready(call())
        first = time.perf_counter() - t
        jax.block_until_ready(call())
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            jax.block_until_ready(call())
            times.append(time.perf_counter() - t)
        ms = 1e3 * float(np.median(times))
        rows.append((name, ms, first))
        print(f"  {name:<10s} {ms:12.1f} ms  (compile + first call {first:.1f} s)", flush=True)

    print(f"\n| sampler ({args.devices} devices) | ms / call | compile + first call (s) |")
    print("|---|---:|---:|")
    for name, ms, first in rows:
        print(f"| {name} | {ms:,.1f} | {first:.1f} |")


if __name__ == "__main__":
    main()
