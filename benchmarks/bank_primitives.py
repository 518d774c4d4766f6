"""ms per call of the bank primitives of `ssl_jax.methods.memory` at ImageNet scale, next to a plain
`queries @ bank.T` and a MoCo v2 train step.

    python benchmarks/bank_primitives.py --devices=8 [--k128000] [--small] [--repeats=3]
        [--moco-batch=8 | --no-moco]

Bank `[N, 128]` float32 sharded `P('data', None)` over `--devices` devices (`--devices=8` on a CPU host
sets `XLA_FLAGS=--xla_force_host_platform_device_count=8` before jax is imported), B = 256 replicated
queries; N = 1,281,167 (ImageNet train) on 1 device, padded up to a multiple of the device count
otherwise (1,281,168 on 8). Times: `bank_topk` (k = 4096; k = 128000, InterCLR's pool, with
`--k128000`), `bank_quantiles` (qs = (0.9, 0.99), Ring's band), `sample_rows_where` (num = 4096 in
that band, without and with replacement), the similarity matmul alone (output kept sharded), and
`lax.top_k` vs `lax.approx_max_k` on one device's `[B, N/n]` block (on CPU approx_max_k has no
special kernel). The MoCo v2 ResNet-50 224 px step (`configs/mocov2_imagenet.py`) is measured at
`--moco-batch` images and extrapolated linearly to 256 (labelled). Each entry: compile + one warm-up
call, then the median of `--repeats` calls, each ended by `block_until_ready`. `--small` is a quick
smoke run (N = 65,536, B = 32, k = num = 256, MoCo at one image per device).
"""

from __future__ import annotations

import argparse
import os
import time

from benchmarks._common import simulate_devices

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

IMAGENET_TRAIN = 1_281_167


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--small", action="store_true", help="quick smoke run at small sizes")
    parser.add_argument(
        "--k128000",
        action="store_true",
        help="also bank_topk with k = 128000 (1 device: 23 s/call on the shared 2-core host; 8\n"
        "simulated devices: 84 s/call, 8.1 GB peak RSS with the butterfly merge)",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--moco-batch", type=int, default=8)
    parser.add_argument("--no-moco", action="store_true", help="skip the MoCo v2 step")
    return parser.parse_args()


def timed_ms(f, *args, repeats: int) -> float:
    import jax
    import numpy as np

    jax.block_until_ready(f(*args))  # compile
    jax.block_until_ready(f(*args))  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times))


def moco_step_ms(batch: int, repeats: int, mesh) -> tuple[float, int]:
    """Median ms of the jitted MoCo v2 ImageNet train step at `batch` images, and the image size."""
    import jax
    import numpy as np

    from ssl_jax import configs, train
    from ssl_jax.data import train_input
    from ssl_jax.parallel import sharding

    config = configs.load(os.path.join(ROOT, "configs/mocov2_imagenet.py"))
    config.global_batch_size = batch
    config.method_config.queue_size = max(batch, config.method_config.queue_size // batch * batch)
    exp = train.build_experiment(config, mesh)
    state = train.init_or_restore(exp, None)
    step = train.jit_train_step(exp, state)
    size = train_input.view_side(config.data, 0)
    rng = np.random.default_rng(0)
    batch_arrays = {
        "views": tuple(
            rng.integers(0, 256, (batch, size, size, config.data.channels), dtype=np.uint8)
            for _ in config.data.views
        ),
        "index": np.arange(batch, dtype=np.int32),
        "label": np.zeros(batch, np.int32),
    }
    batch_arrays = sharding.host_to_global(batch_arrays, exp.mesh)
    for _ in range(2):  # compile, warm-up
        state, metrics = step(state, batch_arrays)
        jax.block_until_ready(metrics)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        state, metrics = step(state, batch_arrays)
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - t)
    return 1e3 * float(np.median(times)), size


def main() -> None:
    args = parse_args()
    simulate_devices(args.devices)

    import jax
    from jax import lax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from ssl_jax.methods import memory
    from ssl_jax.methods.negatives import bank_ranks, bank_search
    from ssl_jax.parallel.sharding import DATA_AXIS, make_mesh

    if jax.device_count() < args.devices:
        raise SystemExit(f"asked for {args.devices} devices, have {jax.device_count()}")
    mesh = make_mesh(jax.devices()[: args.devices])
    n_dev = args.devices
    base = 65_536 if args.small else IMAGENET_TRAIN
    num_rows = -(-base // n_dev) * n_dev
    dim, batch = 128, (32 if args.small else 256)
    k = num = 256 if args.small else 4096
    qs = (0.9, 0.99)
    per_device = num_rows // n_dev
    print(
        f"devices: {n_dev} × {jax.devices()[0].device_kind} ({os.cpu_count()} host cores"
        f"{', shared with other jobs' if jax.devices()[0].platform == 'cpu' else ''}); "
        f"bank {num_rows:,} × {dim} float32"
        + (f" (ImageNet's {base:,} padded to a multiple of {n_dev})" if num_rows != base else "")
        + f", {per_device:,} rows per device; B = {batch} queries; median of {args.repeats} calls",
        flush=True,
    )

    bank = memory.init_rows(jax.random.PRNGKey(0), num_rows, dim, mesh)
    queries = memory.l2_normalize(jax.random.normal(jax.random.PRNGKey(1), (batch, dim)))
    rng = jax.random.PRNGKey(2)
    rows = []

    def add(name, ms, note=""):
        rows.append((name, ms, note))
        print(f"  {name:<48s} {ms:12.1f} ms  {note}", flush=True)

    matmul = jax.jit(lambda b, q: q @ b.T, out_shardings=NamedSharding(mesh, P(None, DATA_AXIS)))
    add(
        f"queries @ bank.T  [{batch}, {num_rows:,}]",
        timed_ms(matmul, bank, queries, repeats=args.repeats),
        "sims stay sharded",
    )
    for kk in (k, 128_000) if args.k128000 and not args.small else (k,):
        f = jax.jit(lambda b, q, kk=kk: bank_search.bank_topk(b, q, kk, mesh))
        add(f"bank_topk k={kk}", timed_ms(f, bank, queries, repeats=args.repeats))
    quantiles = jax.jit(lambda b, q: bank_ranks.bank_quantiles(b, q, qs, mesh))
    add(
        f"bank_quantiles qs={qs} (32 iters, exact)",
        timed_ms(quantiles, bank, queries, repeats=args.repeats),
    )
    band = quantiles(bank, queries)
    lo, hi = band[:, 0], band[:, 1]
    for replace in (False, True):
        f = jax.jit(
            lambda r, b, q, lo, hi, replace=replace: bank_search.sample_rows_where(
                r, b, q, lo, hi, num, mesh, replace=replace
            )
        )
        add(
            f"sample_rows_where num={num} replace={replace}",
            timed_ms(f, rng, bank, queries, lo, hi, repeats=args.repeats),
            "band = [q0.9, q0.99]",
        )

    block = jax.device_put(
        jax.random.normal(jax.random.PRNGKey(3), (batch, per_device)), jax.devices()[0]
    )
    top_k = jax.jit(lambda x: lax.top_k(x, k))
    approx = jax.jit(lambda x: lax.approx_max_k(x, k))
    add(
        f"lax.top_k k={k} on one [{batch}, {per_device:,}] block",
        timed_ms(top_k, block, repeats=args.repeats),
        "one device",
    )
    add(
        f"lax.approx_max_k k={k} on the same block",
        timed_ms(approx, block, repeats=args.repeats),
        "one device; no CPU kernel",
    )
    del block

    if not args.no_moco:
        mb = n_dev if args.small else -(-args.moco_batch // n_dev) * n_dev
        ms, size = moco_step_ms(mb, args.repeats, mesh)
        add(f"MoCo v2 R50 train step, batch {mb} @ {size} px", ms, "measured")
        add(
            f"MoCo v2 R50 train step, batch 256 @ {size} px",
            ms * 256 / mb,
            f"EXTRAPOLATED (×256/{mb})",
        )

    print(f"\n| primitive ({n_dev} device{'s' if n_dev > 1 else ''}) | ms / call | note |")
    print("|---|---:|---|")
    for name, ms, note in rows:
        print(f"| {name} | {ms:,.1f} | {note} |")


if __name__ == "__main__":
    main()
