"""GPU/TPU readiness of the ResNet-50 ImageNet configs (issue 18 item 3): what can be checked without
an accelerator, and the one command to run on the day there is one.

    python benchmarks/accelerator.py --readiness [--devices=8] [--batch=256] [--configs=mocov2_imagenet,...]
    python benchmarks/accelerator.py [--steps=50] [--override data.manual_dir=/data/imagenet ...]

`--readiness` (any host, CPU included: `--devices=N` simulates N XLA:CPU devices, 8 by default) lowers and
compiles each config's train step on abstract inputs (`train.abstract_state` / `abstract_batch`:
nothing is allocated or executed) in `--dtype` (bfloat16 by default, what `model.dtype='auto'`
resolves to on a GPU/TPU) and prints, from the compiled executable:
- FLOPs per image: `cost_analysis()['flops']` of one device's program / its images, against the
  analytic 3 × 4.1 G multiply-adds × views (forward + backward of a ResNet-50 at 224 px per view,
  scaled by each view's pixels; XLA counts a multiply-add as 2 FLOPs, so the analytic figure is
  printed in FLOPs = 2 × MACs). Target (EMA) views run forward only, so the measured figure sits
  below the analytic bound for methods with key views (MoCo v2: (3 + 1) / 6 of it, plus the heads).
- memory per device (`memory_analysis()`): arguments + outputs - aliased + temp, the bound a device
  must hold, beside XLA's `peak_memory_in_bytes` (which XLA:CPU reports without the temp buffers)
  and each part. These are XLA:CPU's buffer assignment; a GPU's differs (conv workspaces, fusion).
- collective bytes per step per device: the arrays the collectives of the HLO produce
  (`ssl_jax.parallel.hlo.collectives`, as `tests/test_hlo.py`), by kind, against the parameters' bytes (the
  gradients' all-reduce), and whether any collective has an axis of a queue or bank (its rows or one
  device's shard of them): it must not.
- whether the state is donated (`ssl_jax.parallel.hlo.donates_state`: aliased bytes = one device's state).

The default mode (on a GPU or TPU host; on CPU it runs too, slowly, e.g. with `:runlocal` configs as a
smoke test) runs each config in bf16 at its real batch on all local devices and prints img/s of the
step alone (synthetic uint8 batches, `benchmarks/train_step.py`'s `compiled_step`) and of the whole
loop (the config's tf.data pipeline, `sharding.prefetch_to_device` as `train.py`, the step), and the
fraction of the loop's time the host waits for the next batch. The loop needs the config's data
(`--override data.manual_dir=/data/imagenet` for tfds ImageNet, or `data.name=image_folder
data.data_dir=...`); without ImageNet, `--photos=N` writes N JPEG photos of ImageNet's typical size
(`_common.write_photos`: ~500 × 375, quality 90) to a temporary `image_folder` and feeds the loop
from it, so decoding and augmentation cost what they cost on ImageNet.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from benchmarks._common import (
    load_config,
    simulate_devices,
    stub_tensorflow_if_missing,
    write_photos,
)

CONFIGS = ("mocov2_imagenet", "sce_imagenet", "jcl_imagenet", "interclr_imagenet")
RESNET50_GMAC = 4.1  # multiply-adds of one 224-px ResNet-50 forward (torchvision's "4.1 GFLOPs")
MiB = 2**20
# Timed runs: a config's pod-sized batch (SCE's 4,096) on a few devices only measures memory pressure
# (the first GPU call, on 2026-11-24, spent its 10 minutes there); `--batch` overrides.
MAX_PER_DEVICE_BATCH = 512


def readiness(config) -> dict:
    """Compile (never run) the config's train step on the current devices → `hlo.step_report`'s
    figures, the analytic FLOPs per image, the compile time and the compute dtype."""
    from ssl_jax import train
    from ssl_jax.data import train_input
    from ssl_jax.parallel import hlo

    exp = train.build_experiment(config)
    state, batch = train.abstract_state(exp), exp.input.abstract_batch()
    t = time.perf_counter()
    compiled = train.jit_train_step(exp, state).lower(state, batch).compile()
    report = hlo.step_report(compiled, state, batch)
    sizes = [train_input.view_side(config.data, i) for i in range(len(config.data.views))]
    pixels = sum(s * s / 224**2 for s in sizes)  # in 224-px images
    report.update(
        compile_s=time.perf_counter() - t,
        views=len(sizes),
        dtype=str(np.dtype(exp.sample_input.dtype)),
        analytic_flops_per_image=2 * 3 * RESNET50_GMAC * 1e9 * pixels,
    )
    return report


def print_readiness(name: str, r: dict) -> None:
    mb = lambda b: f"{b / MiB:,.1f} MiB"
    print(
        f"{name}: {r['devices']} devices × {r['per_device_batch']:g} images, {r['views']} views, "
        f"{r['dtype']}, compiled in {r['compile_s']:.0f} s",
        flush=True,
    )
    ratio = r["flops_per_image"] / r["analytic_flops_per_image"]
    print(
        f"  FLOPs/image {r['flops_per_image'] / 1e9:,.1f} G vs analytic 3 × 4.1 GMAC × views = "
        f"{r['analytic_flops_per_image'] / 1e9:,.1f} GFLOP ({ratio:.2f}×)"
    )
    bound = r["argument_bytes"] + r["output_bytes"] - r["alias_bytes"] + r["temp_bytes"]
    print(
        f"  memory/device: arguments + outputs - aliased + temp = {mb(bound)} (XLA's peak "
        f"{mb(r['peak_bytes'])}) | arguments {mb(r['argument_bytes'])} "
        f"(state {mb(r['state_bytes'])}) | outputs {mb(r['output_bytes'])} | temp "
        f"{mb(r['temp_bytes'])} | aliased {mb(r['alias_bytes'])}"
    )
    kinds = ", ".join(f"{k} {mb(v)}" for k, v in sorted(r["collective_bytes_by_kind"].items()))
    largest = r["largest_collective"]
    print(
        f"  collectives/step/device: {mb(r['collective_bytes'])} ({kinds}); parameters "
        f"{mb(r['param_bytes'])}; largest {largest[0]} {largest[1]}{list(largest[2])}"
        if largest
        else "  collectives: none"
    )
    tables = ", ".join(f"{p} {list(s)}" for p, s in r["tables"].items()) or "none"
    moved = (
        f"MOVED by {sum(map(len, r['tables_moved'].values()))} collectives, e.g. "
        f"{next(iter(r['tables_moved'].values()))[0]}"
        if r["tables_moved"]
        else "never moved by a collective"
    )
    print(f"  queues/banks: {tables}: {moved}")
    missing = r["state_bytes"] - r["alias_bytes"]
    donated = "yes" if r["donated"] else f"all but {missing:,} bytes" if missing < 1024 else "NO"
    print(
        f"  state donated: {donated} ({r['alias_bytes']:,} of {r['state_bytes']:,} bytes aliased)",
        flush=True,
    )


def step_rates(config, steps: int) -> tuple[dict, tuple]:
    """img/s of the step alone on one resident synthetic batch: the median of `steps` steps each
    ended by `block_until_ready` (`synced`), and `steps` steps dispatched back to back with one wait
    at the end (`pipelined`, what the loop sees when the input keeps up); the device's peak memory
    where the backend reports it. Returns (figures, the warm compiled step)."""
    import jax

    from benchmarks.train_step import compiled_step, time_steps

    b = config.global_batch_size
    times, compiled = time_steps(compiled_step(config), steps)
    (seconds,), compiled = time_steps(compiled, steps, sync_each_step=False)
    stats = jax.local_devices()[0].memory_stats() or {}
    figures = {
        "synced": b / float(np.median(times)),
        "pipelined": steps * b / seconds,
        "peak_bytes": stats.get("peak_bytes_in_use", 0),
    }
    return figures, compiled


def profile_top_ops(step, state, batch, directory: str, steps: int = 5, top: int = 15) -> list:
    """Trace `steps` steps with `jax.profiler` (a Perfetto trace under `directory`) and return the
    `top` device-side event names by total time: ([(name, ms per step, share of the device time)],
    the advanced state: the step donates it)."""
    import glob
    import gzip

    import jax

    with jax.profiler.trace(directory, create_perfetto_trace=True):
        for _ in range(steps):
            state, metrics = step(state, batch)
        jax.block_until_ready((state, metrics))
    path = sorted(glob.glob(os.path.join(directory, "**", "*.trace.json.gz"), recursive=True))[-1]
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    names = {
        e["pid"]: e["args"]["name"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    device = {pid for pid, n in names.items() if "/device:" in n and "CPU" not in n}
    totals: dict = {}
    for e in events:
        if e.get("ph") == "X" and e.get("pid") in device:
            totals[e["name"]] = totals.get(e["name"], 0.0) + e.get("dur", 0.0)
    whole = sum(totals.values()) or 1.0
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])[:top]
    return [(n, d / 1e3 / steps, d / whole) for n, d in ranked], state


def timed_loop(step, state, batches, steps: int) -> tuple[dict, object]:
    """Run `steps` steps fed by `batches` (global arrays, already prefetched): (img/s and the fraction
    of the time the host waited for the next batch, the advanced state: the step donates it)."""
    import jax

    for _ in range(2):  # warm the feeder
        state, metrics = step(state, next(batches))
    jax.block_until_ready(metrics)
    wait, t0 = 0.0, time.perf_counter()
    for _ in range(steps):
        t = time.perf_counter()
        batch = next(batches)
        wait += time.perf_counter() - t
        state, metrics = step(state, batch)
    jax.block_until_ready((state, metrics))
    total = time.perf_counter() - t0
    return {"rate": steps * len(batch["index"]) / total, "wait": wait / total}, state


def host_batches(config, copies: int = 4):
    """Endless host (numpy) batches shaped as the pipeline's (`train_step.synthetic_batch`): `copies`
    distinct random ones, cycled, so the loop pays each batch's host→device copy but no
    augmentation."""
    from benchmarks.train_step import synthetic_batch

    host = [synthetic_batch(config, seed=1 + k) for k in range(copies)]
    while True:
        yield from host


def loop_rates(config, steps: int, *, step_only: bool, profile_dir: str = "") -> dict:
    """`step_rates`, then the loop fed by host batches through `sharding.prefetch_to_device` as
    `train.py` feeds it: synthetic host batches (the copies, no augmentation) and, unless `step_only`,
    the config's tf.data pipeline (augmentation included)."""
    import jax

    from ssl_jax import train
    from ssl_jax.parallel import sharding

    figures, (step, state, batch) = step_rates(config, steps)
    if profile_dir:
        top, state = profile_top_ops(step, state, batch, profile_dir)
        print(
            f"  device time by op ({profile_dir}):", "" if top else "no device events", flush=True
        )
        for name, ms, share in top:
            print(f"    {ms:8.2f} ms/step {100 * share:5.1f} %  {name[:110]}", flush=True)
    mesh = sharding.make_mesh()
    feed = sharding.prefetch_to_device(host_batches(config), train.PREFETCH_BATCHES, mesh)
    copies, state = timed_loop(step, state, feed, steps)
    figures.update(copies=copies["rate"], copies_wait=copies["wait"])
    if not step_only:
        from ssl_jax.data import pipeline

        data = pipeline.train_iterator(
            config, process_index=jax.process_index(), process_count=jax.process_count()
        )
        feed = sharding.prefetch_to_device(data, train.PREFETCH_BATCHES, mesh)
        loop, state = timed_loop(step, state, feed, steps)
        figures.update(loop=loop["rate"], wait=loop["wait"])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--readiness", action="store_true", help="compile only (CPU is fine)")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated names/paths")
    parser.add_argument(
        "--batch",
        type=int,
        default=0,
        help="global batch (0: the config's; timed runs cap it at "
        f"{MAX_PER_DEVICE_BATCH} per device)",
    )
    parser.add_argument("--devices", type=int, default=8, help="simulated CPU devices (readiness)")
    parser.add_argument("--dtype", default="bfloat16", help="model.dtype: bfloat16 | float32")
    parser.add_argument("--steps", type=int, default=50, help="timed steps (default mode)")
    parser.add_argument("--override", nargs="*", default=[], help="key=value on every config")
    parser.add_argument(
        "--step-only",
        action="store_true",
        help="no input pipeline: the step and the host→device copies only (a host without "
        "TensorFlow gets an inert stand-in for it; see _common.stub_tensorflow_if_missing)",
    )
    parser.add_argument(
        "--profile", default="", help="trace 5 steps per config under this folder; print top ops"
    )
    parser.add_argument("--json", default="", help="append one JSON line per config here")
    parser.add_argument(
        "--photos",
        type=int,
        default=0,
        help="feed the loop from an image_folder of this many ImageNet-sized JPEG photos "
        "(a host without ImageNet)",
    )
    args = parser.parse_args()
    if args.photos:
        import tempfile

        folder = tempfile.mkdtemp(prefix="accelerator_photos_")
        t = time.perf_counter()
        write_photos(folder, args.photos)
        print(
            f"{args.photos} JPEG photos (~500 × 375) written to {folder} in "
            f"{time.perf_counter() - t:.0f} s",
            flush=True,
        )
        args.override = [*args.override, "data.name=image_folder", f"data.data_dir={folder}"]
    if args.step_only and stub_tensorflow_if_missing():
        print(
            "TensorFlow is not installed here: an inert stand-in is imported instead (--step-only)"
        )
    if args.readiness:
        simulate_devices(args.devices)
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    kind = jax.devices()[0].device_kind
    print(
        f"devices: {jax.device_count()} × {kind} "
        f"({jax.default_backend()}, {os.cpu_count()} host cores)",
        flush=True,
    )
    if not args.readiness and jax.default_backend() == "cpu":
        print("  (no GPU/TPU: these are CPU figures; --readiness is the CPU mode)", flush=True)
    for name in args.configs.split(","):
        config = load_config(name, batch=args.batch, dtype=args.dtype, overrides=args.override)
        cap = MAX_PER_DEVICE_BATCH * jax.device_count()
        if not args.readiness and not args.batch and config.global_batch_size > cap:
            print(
                f"{name}: its batch of {config.global_batch_size} is meant for a pod; timed at "
                f"{cap} ({MAX_PER_DEVICE_BATCH} per device; --batch to choose)",
                flush=True,
            )
            config = load_config(name, batch=cap, dtype=args.dtype, overrides=args.override)
        label = f"{name} (batch {config.global_batch_size})"
        if args.readiness:
            print_readiness(label, readiness(config))
            continue
        r = loop_rates(
            config,
            args.steps,
            step_only=args.step_only,
            profile_dir=os.path.join(args.profile, name.replace(":", "_")) if args.profile else "",
        )
        line = (
            f"{label}, {config.model.dtype}: step alone {r['synced']:,.1f} img/s (each step "
            f"waited) / {r['pipelined']:,.1f} img/s (dispatched back to back) | fed host copies "
            f"{r['copies']:,.1f} img/s (waiting {100 * r['copies_wait']:.1f} %)"
        )
        if "loop" in r:
            line += (
                f" | whole loop {r['loop']:,.1f} img/s (waiting for input "
                f"{100 * r['wait']:.1f} % of the loop)"
            )
        if r["peak_bytes"]:
            line += f" | peak device memory {r['peak_bytes'] / 2**30:.1f} GiB"
        print(line, flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(
                    json.dumps(
                        {
                            "config": name,
                            "batch": config.global_batch_size,
                            "dtype": config.model.dtype,
                            "overrides": args.override,
                            "device": kind,
                            **r,
                        }
                    )
                    + "\n"
                )


if __name__ == "__main__":
    main()
