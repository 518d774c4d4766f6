"""Train-step time and peak memory of JCL vs MoCo v2 at the same batch and model, on the current
devices.

Usage: python benchmarks/jcl_vs_moco.py [--batch B] [--size S] [--backbone resnet18|resnet50]
          [--stem cifar|imagenet] [--width W] [--num-keys M'] [--queue K] [--dtype float32|bfloat16]
          [--steps N] [--warmup N]
Defaults are a small CPU size (ResNet-18, CIFAR stem, width 1/4, 32 px, batch 32); the official
setting is `--batch 256 --size 224 --backbone resnet50 --stem imagenet --width 1 --queue 65536`.

Each method runs the full jitted train step of `train.jit_train_step` (EMA, online forward/backward,
key forward with shuffle-BN, loss, SGD, enqueue) on synthetic uint8 views that are already on the
devices, so the input pipeline is not timed. Methods run in separate processes so that the devices'
peak-memory counters start clean. JCL's key encoder sees M'·B crops per step against MoCo v2's B.

Reported per method:
- img/s: global batch / median step time over `--steps` steps after `--warmup` steps (query images);
- ms/step: the median step time; cpu-ms/step: the median process CPU time of a step (all threads),
  the figure to compare on a shared CPU machine where wall-clock depends on the other jobs;
- peak: `jax.devices()[0].memory_stats()['peak_bytes_in_use']` when the backend has it (GPU/TPU),
  device 0 only;
- compiled: the jitted step's `memory_analysis()` on one device: temp + argument bytes (the state,
  donated, and the batch; outputs alias the donated state); (temp): the temp bytes alone.

The last line gives the JCL / MoCo v2 ratios (the JCL authors: about 2.5× MoCo v2 at M' = 4).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the repo root


def make_config(method: str, args):
    import ml_collections

    from ssl_jax import configs

    c = configs.base_config()
    c.method = method
    c.data.name = "imagenet2012"  # only its published size is read: no data is touched
    c.data.image_size = args.size
    c.data.recipes = ml_collections.ConfigDict(
        {"crop": ({"op": "random_resized_crop", "size": args.size, "scale": (0.2, 1.0)},)}
    )
    common = dict(temperature=0.2, queue_size=args.queue, shuffle_bn=True, key_bn_groups=0)
    if method == "jcl":
        c.method_config = ml_collections.ConfigDict(
            dict(common, num_keys=args.num_keys, lam=2.0, lam_schedule="linear_epoch")
        )
        c.data.views = ("crop",) * (args.num_keys + 1)
    else:
        c.method_config = ml_collections.ConfigDict(common)
        c.data.views = ("crop", "crop")
    c.model.backbone = args.backbone
    c.model.stem = args.stem
    c.model.width = args.width
    c.model.dtype = args.dtype
    hidden = {"resnet50": 2048}.get(args.backbone, 512)
    c.model.projector.hidden_dims = (int(hidden * args.width),)
    c.global_batch_size = args.batch
    c.num_epochs = 200.0
    return c


def run_one(method: str, args) -> dict:
    import jax
    import numpy as np

    from ssl_jax import sharding, train

    config = make_config(method, args)
    exp = train.build_experiment(config)
    state = train.init_or_restore(exp, None)
    rng = np.random.default_rng(0)
    views = tuple(
        rng.integers(0, 256, (args.batch, args.size, args.size, 3), dtype=np.uint8)
        for _ in config.data.views
    )
    batch = sharding.host_to_global(
        {
            "views": views,
            "index": np.arange(args.batch, dtype=np.int32),
            "label": np.zeros(args.batch, np.int32),
        },
        exp.mesh,
    )
    step = train.jit_train_step(exp, state)
    t0 = time.perf_counter()
    compiled = step.lower(state, batch).compile()
    compile_s = time.perf_counter() - t0
    analysis = compiled.memory_analysis()
    compiled_bytes = temp_bytes = None
    if analysis is not None:
        temp_bytes = int(analysis.temp_size_in_bytes)
        compiled_bytes = temp_bytes + int(analysis.argument_size_in_bytes)
    times, cpu_times = [], []
    for i in range(args.warmup + args.steps):
        t, c = time.perf_counter(), time.process_time()
        state, metrics = compiled(state, batch)
        jax.block_until_ready((state, metrics))
        if i >= args.warmup:
            times.append(time.perf_counter() - t)
            cpu_times.append(time.process_time() - c)
    stats = jax.devices()[0].memory_stats() or {}
    median = statistics.median(times)
    return {
        "method": method,
        "ms_per_step": 1000 * median,
        "cpu_ms_per_step": 1000 * statistics.median(cpu_times),
        "img_per_s": args.batch / median,
        "peak_bytes": stats.get("peak_bytes_in_use"),
        "compiled_bytes": compiled_bytes,
        "temp_bytes": temp_bytes,
        "compile_s": compile_s,
        "loss": float(metrics["train/loss"]),
        "devices": f"{jax.device_count()} x {jax.devices()[0].device_kind}",
    }


def _gib(x) -> str:
    return "n/a" if x is None else f"{x / 2**30:.3f} GiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--backbone", default="resnet18")
    parser.add_argument("--stem", default="cifar")
    parser.add_argument("--width", type=float, default=0.25)
    parser.add_argument("--num-keys", type=int, default=4)
    parser.add_argument("--queue", type=int, default=4096)
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--methods", default="mocov2,jcl")
    # child process: run one method, print JSON
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(run_one(args.one, args)), flush=True)
        return
    results = []
    child_args = [
        f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items() if k not in ("methods", "one")
    ]
    for method in args.methods.split(","):
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), *child_args, "--one", method],
            capture_output=True,
            text=True,
            check=False,
        )
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        if proc.returncode or not lines:
            sys.exit(f"{method} failed:\n{proc.stderr[-3000:]}")
        results.append(json.loads(lines[-1][len("RESULT ") :]))
    r0 = results[0]
    print(
        f"{args.backbone} ({args.stem} stem, width {args.width}), {args.size} px, "
        f"batch {args.batch}, {args.dtype}, queue {args.queue}, JCL M' = {args.num_keys}; "
        f"{r0['devices']}; median of {args.steps} steps after {args.warmup} warm-up"
    )
    print(
        f"{'method':<8} {'img/s':>9} {'ms/step':>9} {'cpu-ms/step':>11} {'peak (dev 0)':>14} "
        f"{'compiled':>12} {'(temp)':>12} {'compile':>8}"
    )
    for r in results:
        print(
            f"{r['method']:<8} {r['img_per_s']:9.1f} {r['ms_per_step']:9.1f} "
            f"{r['cpu_ms_per_step']:11.1f} {_gib(r['peak_bytes']):>14} "
            f"{_gib(r['compiled_bytes']):>12} {_gib(r['temp_bytes']):>12} {r['compile_s']:7.1f}s"
        )
    by = {r["method"]: r for r in results}
    if "jcl" in by and "mocov2" in by:
        j, m = by["jcl"], by["mocov2"]
        parts = [
            f"step time {j['ms_per_step'] / m['ms_per_step']:.2f}x",
            f"CPU time {j['cpu_ms_per_step'] / m['cpu_ms_per_step']:.2f}x",
        ]
        if j["peak_bytes"] and m["peak_bytes"]:
            parts.append(f"peak memory {j['peak_bytes'] / m['peak_bytes']:.2f}x")
        if j["compiled_bytes"] and m["compiled_bytes"]:
            parts.append(f"compiled memory {j['compiled_bytes'] / m['compiled_bytes']:.2f}x")
            parts.append(f"temp {j['temp_bytes'] / m['temp_bytes']:.2f}x")
        print("JCL / MoCo v2: " + ", ".join(parts))


if __name__ == "__main__":
    main()
