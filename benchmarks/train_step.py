"""img/s of the jitted train step of one or several configs (their ratio), and of the same MoCo v2
model/batch step in plain PyTorch.

    python benchmarks/train_step.py --config=configs/mocov2_cifar10.py --batch=64 [--steps=10]
        [--torch] [--override model.width=0.5 ...]
    python benchmarks/train_step.py --config=configs/mocov2_fashion_mnist.py,configs/interclr_fashion_mnist.py \
        --batch=256 --devices=8 [--bank-rows=1281152] [--rounds=2]

The JAX side is `train.jit_train_step` on synthetic uint8 views (no input pipeline) on the current devices
(`--devices=N` simulates N CPU devices). With several configs (comma-separated) each step is timed in
`--rounds` alternating rounds (A B A B: the shared host's load drifts), the median step of all its rounds
is reported, and the ratio of each config's step time to the first's is printed. `--bank-rows=N`
benchmarks a bank method at a bank size other than its data set's (e.g. InterCLR's ImageNet bank,
1,281,152 rows, with the Fashion-MNIST model): the step only sees synthetic batches, so the train split
is declared to hold N images (`datasets.num_examples` answers N for it) and the InterCLR bank-relative
numbers are rescaled (`configs/common.interclr_scaled(N)`: C, K, pool; N = 1,281,152 gives the
official 10,000 / 16,384 / 128,000). Banks start as random rows and labels `i mod C` (no k-means).
The PyTorch side (`--torch`, needs `pip install torch==2.13.0`) is the same MoCo v2 step written here: online
ResNet + MLP head forward/backward on view 1, EMA key encoder (no grad) on view 2, InfoNCE over
[q·k, q·queue]/τ, SGD with momentum + weight decay, EMA and enqueue. The ResNet is tests/torch_resnet.py
(torchvision's module names and padding). Prints img/s of both and the ratio JAX / PyTorch.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from benchmarks._common import simulate_devices  # noqa: E402
from benchmarks.torch_step import torch_resnet  # noqa: E402


def view_size(config) -> int:
    from ssl_jax.data.train_input import view_side

    return view_side(config.data, 0)


def synthetic_batch(config, seed: int = 0) -> dict:
    """A random host batch shaped as the pipeline's: uint8 views at the recipe's size, or with
    `data.device_crops` the canvases with crop boxes inside a 375 × 500 (ImageNet-typical) image."""
    from ssl_jax.data.device.checks import device_crop_side

    size, b = view_size(config), config.global_batch_size
    rng = np.random.default_rng(seed)
    rows = {"index": np.arange(b, dtype=np.int32), "label": np.zeros(b, np.int32)}
    side, views = device_crop_side(config.data), len(config.data.views)
    channels = config.data.channels
    if not side:
        shape = (b, size, size, channels)
        return {"views": tuple(rng.integers(0, 256, shape, np.uint8) for _ in range(views)), **rows}
    height, width = min(side, 375), min(side, 500)
    h = rng.integers(height // 2, height + 1, (b, views))
    w = rng.integers(width // 2, width + 1, (b, views))
    top, left = rng.integers(0, height - h + 1), rng.integers(0, width - w + 1)
    return {
        "canvas": rng.integers(0, 256, (b, side, side, channels), np.uint8),
        "boxes": np.stack([top, left, h, w], axis=-1).astype(np.int32),
        "flips": rng.random((b, views)) < 0.5,
        **rows,
    }


def compiled_step(config):
    """(step function, state, global batch) of a config on synthetic uint8 views, compiled and warm."""
    import jax

    from ssl_jax import train
    from ssl_jax.parallel import sharding

    exp = train.build_experiment(config)
    state = train.init_or_restore(exp, None)
    step = train.jit_train_step(exp, state)
    batch = sharding.host_to_global(synthetic_batch(config), exp.mesh)
    state, metrics = step(state, batch)  # compile
    state, metrics = step(state, batch)
    jax.block_until_ready(metrics)
    return step, state, batch


def time_steps(compiled, steps: int, *, sync_each_step: bool = True) -> tuple[list[float], tuple]:
    """Seconds of `steps` calls → (times, advanced compiled). `sync_each_step`: each call ended by
    `block_until_ready`, one time per step; else all `steps` dispatched back to back and one wait
    on the last state and metrics, one time: the whole run's."""
    import jax

    step, state, batch = compiled
    if not sync_each_step:
        t = time.perf_counter()
        for _ in range(steps):
            state, metrics = step(state, batch)
        jax.block_until_ready((state, metrics))
        return [time.perf_counter() - t], (step, state, batch)
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        state, metrics = step(state, batch)
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - t)
    return times, (step, state, batch)


def alternate_rounds(compiled: dict, rounds: int, steps: int) -> dict[str, list[float]]:
    """`rounds` alternating rounds (A B A B: the shared host's load drifts) of `steps` timed steps
    of each compiled step in `compiled` (name → `compiled_step`'s tuple, advanced in place) →
    name → the seconds of all its steps; prints each round's median."""
    times = {name: [] for name in compiled}
    for r in range(rounds):
        for name in compiled:
            seconds, compiled[name] = time_steps(compiled[name], steps)
            times[name] += seconds
            print(f"round {r}: {name} {1e3 * np.median(seconds):9.1f} ms/step", flush=True)
    return times


def jax_img_per_sec(config, steps: int) -> float:
    times, _ = time_steps(compiled_step(config), steps)
    return config.global_batch_size / float(np.median(times))


def declare_train_rows(num_rows: int) -> None:
    """Make `datasets.num_examples` answer `num_rows` for every train split (see `--bank-rows`)."""
    from ssl_jax.data import datasets

    real = datasets.num_examples

    def num_examples(data_config, split):
        return num_rows if split == data_config.train_split else real(data_config, split)

    datasets.num_examples = num_examples


def torch_img_per_sec(config, steps: int, threads: int) -> float:
    import copy

    import torch
    from torch import nn

    TorchResNet = torch_resnet()
    torch.set_num_threads(threads)
    depth = int(config.model.backbone.removeprefix("resnet"))
    trunk = TorchResNet(depth, config.model.stem, config.model.width, config.data.channels)
    feat = trunk(torch.zeros(2, config.data.channels, 32, 32)).shape[1]
    head = config.model.projector
    layers, d = [], feat
    for h in head.hidden_dims:
        layers += [nn.Linear(d, h, bias=head.hidden_bias), nn.ReLU(inplace=True)]
        d = h
    layers.append(nn.Linear(d, head.out_dim))
    online = nn.Sequential(trunk, *layers)
    target = copy.deepcopy(online)
    for p in target.parameters():
        p.requires_grad_(False)
    hp = config.method_config
    queue = nn.functional.normalize(torch.randn(hp.queue_size, head.out_dim), dim=1)
    opt = torch.optim.SGD(online.parameters(), lr=0.03, momentum=0.9, weight_decay=1e-4)
    size, b = view_size(config), config.global_batch_size
    x1 = torch.randn(b, config.data.channels, size, size)
    x2 = torch.randn(b, config.data.channels, size, size)

    def step():
        nonlocal queue
        with torch.no_grad():
            for pt, po in zip(target.parameters(), online.parameters()):
                pt.mul_(0.999).add_(po.detach(), alpha=0.001)
            perm = torch.randperm(b)
            k = nn.functional.normalize(target(x2[perm]), dim=1)[torch.argsort(perm)]
        q = nn.functional.normalize(online(x1), dim=1)
        logits = torch.cat([(q * k).sum(1, keepdim=True), q @ queue.T], 1) / hp.temperature
        loss = nn.functional.cross_entropy(logits, torch.zeros(b, dtype=torch.long))
        opt.zero_grad()
        loss.backward()
        opt.step()
        queue = torch.cat([k, queue[:-b]])

    step()
    step()
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return b / float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--config", default="configs/mocov2_cifar10.py", help="comma-separated")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--devices", type=int, default=1, help="simulated CPU devices")
    parser.add_argument(
        "--rounds", type=int, default=2, help="alternating rounds (several configs)"
    )
    parser.add_argument("--bank-rows", type=int, default=0, help="bank size of bank methods")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--torch", action="store_true", help="also time the PyTorch step")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--dtype", default=None, help="float32 | bfloat16 (JAX compute dtype)")
    parser.add_argument("--override", nargs="*", default=[], help="key=value on the config")
    args = parser.parse_args()
    if args.torch and "," in args.config:
        raise SystemExit("--torch compares one config with its PyTorch step: give one --config")
    simulate_devices(args.devices)
    import jax

    from configs import common
    from ssl_jax import configs

    if args.bank_rows:
        declare_train_rows(args.bank_rows)
    loaded = []
    for path in args.config.split(","):
        config = configs.load(path)
        config.global_batch_size = args.batch
        hp = config.method_config
        if "queue_size" in hp:  # a multiple of the batch (IR / IRing have a bank instead)
            hp.queue_size = max(args.batch, hp.queue_size // args.batch * args.batch)
        if args.bank_rows and "bank_size" in hp:
            hp.bank_size = args.bank_rows
            if config.method == "interclr":
                hp.update(common.interclr_scaled(args.bank_rows))
        if args.dtype:
            config.model.dtype = args.dtype
        for item in args.override:
            configs.apply_override(config, item)
        loaded.append((os.path.splitext(os.path.basename(path))[0], config))
    first = loaded[0][1]
    print(
        f"devices: {jax.device_count()} × {jax.devices()[0].device_kind} ({os.cpu_count()} host "
        f"cores); {first.model.backbone} {first.model.stem} stem width {first.model.width}, "
        f"{view_size(first)} px, batch {args.batch}, {first.model.dtype}"
        + (f", bank {args.bank_rows:,} rows" if args.bank_rows else ""),
        flush=True,
    )
    if len(loaded) == 1:
        jax_rate = jax_img_per_sec(first, args.steps)
        print(f"JAX     {jax_rate:8.1f} img/s", flush=True)
    else:
        compiled, times = {}, {}
        for name, config in loaded:
            t = time.perf_counter()
            compiled[name] = compiled_step(config)
            hp = config.method_config
            extra = (
                f" (bank {hp.bank_size:,}, C {hp.num_clusters:,}, K {hp.num_negatives:,}, "
                f"pool {hp.pool_size:,}, {hp.sampler})"
                if config.method == "interclr"
                else ""
            )
            print(f"{name}: compiled in {time.perf_counter() - t:.1f} s{extra}", flush=True)
            times[name] = []
        for name, seconds in alternate_rounds(compiled, args.rounds, args.steps).items():
            times[name] += seconds
        base = float(np.median(times[loaded[0][0]]))
        for name, _ in loaded:
            median = float(np.median(times[name]))
            print(
                f"{name:32s} {1e3 * median:9.1f} ms/step {args.batch / median:8.1f} img/s  "
                f"×{median / base:.2f} step time of {loaded[0][0]}"
            )
    if args.torch:
        torch_rate = torch_img_per_sec(first, args.steps, args.threads)
        print(f"PyTorch {torch_rate:8.1f} img/s  ({args.threads} threads)")
        print(f"ratio JAX / PyTorch = {jax_rate / torch_rate:.2f}")


if __name__ == "__main__":
    main()
