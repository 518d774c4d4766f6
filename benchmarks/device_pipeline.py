"""The device pipeline (`data.pipeline='device'`) beside tf.data (`'tfdata'`), one side-by-side run:
img/s of the step alone and of the whole loop, each pipeline's loop / step, the ratios device /
tfdata, and the minutes 200 epochs of a 60,000-image set take at each loop's rate.

    python benchmarks/device_pipeline.py [--config=configs/sce_fashion_mnist.py] [--steps=20]
        [--rounds=2] [--batch=0] [--dtype=] [--override model.width=0.5 ...] [--torch]
    # on a GPU (the issue's figure): MoCo v2, ResNet-18 CIFAR stem, 32 px, batch 512, bf16
    python benchmarks/device_pipeline.py --config=configs/mocov2_color_fashion_mnist.py \
        --batch=512 --dtype=bfloat16 --override model.width=1.0 --torch

- step alone, 'tfdata': the step on one resident batch of synthetic uint8 views (the host's
  augmentation left out: what the loop reaches when tf.data keeps up, and the bar the device
  pipeline's whole loop is held to: "device loop / step on synthetic views").
- step alone, 'device': the step on one resident index batch and the split in device memory: the
  gather and the whole recipe are inside the step, so this is also its whole loop's ceiling.
- whole loop: what `train.py` runs: tf.data's `train_iterator` (or the device pipeline's index
  batches) through `sharding.prefetch_to_device` into the step, `--steps` steps after two warm ones.
Each figure is the median over `--rounds` alternating rounds (tfdata, device, tfdata, device: a shared
host's load drifts). On a CPU the tf.data threads and the step share the same cores. The default
config is the default job's (`launch/default_job.sh`). Where TensorFlow is not installed (GPU
images that ship JAX and PyTorch only) the 'tfdata' side is left out, and said so. `--torch` runs
`benchmarks/torch_step.py` (the same MoCo v2 step in plain PyTorch, eager and `torch.compile`,
bf16 on a GPU, channels-last) on the same card in the same command, at the same batch and width.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import ssl_jax  # noqa: E402, F401  (its XLA_FLAGS defaults, before JAX starts a backend)

PIPELINES = ("tfdata", "device")
EPOCH_IMAGES = 60_000  # an epoch of Fashion-MNIST / color_fashion_mnist
EPOCHS = 200


def load_config(path: str, *, pipeline: str, batch: int, dtype: str, overrides=()):
    from ssl_jax import configs

    config = configs.load(path)
    if batch:
        config.global_batch_size = batch
    if dtype:
        config.model.dtype = dtype
    for assignment in overrides:
        configs.apply_override(config, assignment)
    config.data.pipeline = pipeline
    config.evals = type(config.evals)()
    return config


class Side:
    """One pipeline's compiled step, its state, a resident batch (step alone) and its loop's feed."""

    def __init__(self, config, *, loop: bool = True):
        import jax

        from ssl_jax import train
        from ssl_jax.data import train_input
        from ssl_jax.parallel import sharding

        self.exp = train.build_experiment(config)
        mesh = self.exp.mesh
        self.state = train.init_or_restore(self.exp, None)
        self.step = train.jit_train_step(self.exp, self.state)
        self.batch_size = config.global_batch_size

        def feed():  # the loop's feed
            return self.exp.input.batches(0, prefetch=train.PREFETCH_BATCHES)

        if self.exp.input.mode == train_input.DEVICE_TABLE:
            self.feed = feed()
            self.resident = next(self.feed)
        else:
            from benchmarks.train_step import synthetic_batch

            self.resident = sharding.host_to_global(synthetic_batch(config), mesh)
            self.feed = feed() if loop else None
        for _ in range(2):  # compile, warm
            self.state, metrics = self.step(self.state, self.resident)
        jax.block_until_ready(metrics)

    def step_alone(self, steps: int) -> float:
        """img/s of `steps` steps dispatched back to back on the resident batch, one wait."""
        import jax

        t = time.perf_counter()
        for _ in range(steps):
            self.state, metrics = self.step(self.state, self.resident)
        jax.block_until_ready((self.state, metrics))
        return steps * self.batch_size / (time.perf_counter() - t)

    def loop(self, steps: int) -> tuple[float, float]:
        """(img/s, fraction of the time waiting for the next batch) of the whole loop; NaN without
        a feed (no TensorFlow for tf.data)."""
        from benchmarks.accelerator import timed_loop

        if self.feed is None:
            return float("nan"), float("nan")

        figures, self.state = timed_loop(self.step, self.state, self.feed, steps)
        return figures["rate"], figures["wait"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--config", default="configs/sce_fashion_mnist.py")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--batch", type=int, default=0, help="global batch (0: the config's)")
    parser.add_argument("--dtype", default="", help="model.dtype (empty: the config's)")
    parser.add_argument("--override", nargs="*", default=[], help="key=value on the config")
    parser.add_argument("--torch", action="store_true", help="also the plain PyTorch step")
    parser.add_argument("--torch-modes", default="eager,compile", help="torch_step.py --modes")
    args = parser.parse_args()
    has_tf = importlib.util.find_spec("tensorflow") is not None
    if not has_tf:
        print(
            "TensorFlow is not installed: the 'tfdata' side times its step alone (synthetic "
            "views), not its loop",
            flush=True,
        )

    import jax

    device = jax.devices()[0]
    print(
        f"{args.config}: {jax.device_count()} x {device.device_kind} ({jax.default_backend()}), "
        f"{os.cpu_count()} host cores, {args.steps} steps x {args.rounds} rounds",
        flush=True,
    )
    sides = {}
    for name in PIPELINES:
        t = time.perf_counter()
        config = load_config(
            args.config, pipeline=name, batch=args.batch, dtype=args.dtype, overrides=args.override
        )
        sides[name] = Side(config, loop=has_tf or name == "device")
        print(f"{name}: compiled and warm in {time.perf_counter() - t:.1f} s", flush=True)
    figures = {name: {"step": [], "loop": [], "wait": []} for name in PIPELINES}
    for r in range(args.rounds):
        for name, side in sides.items():
            figures[name]["step"].append(side.step_alone(args.steps))
            rate, wait = side.loop(args.steps)
            figures[name]["loop"].append(rate)
            figures[name]["wait"].append(wait)
            print(
                f"round {r}: {name:6s} step {figures[name]['step'][-1]:9.1f} img/s | "
                f"loop {rate:9.1f} img/s (waiting {100 * wait:4.1f} %)",
                flush=True,
            )
    med = {n: {k: float(np.median(v)) for k, v in f.items()} for n, f in figures.items()}
    print(
        "\n| pipeline | step alone img/s | whole loop img/s | loop / step | waiting for input "
        f"| {EPOCHS} epochs of {EPOCH_IMAGES:,} images |"
    )
    print("|---|---|---|---|---|---|")
    for name, m in med.items():
        minutes = EPOCHS * EPOCH_IMAGES / m["loop"] / 60
        print(
            f"| {name} | {m['step']:,.1f} | {m['loop']:,.1f} | {m['loop'] / m['step']:.2f} "
            f"| {100 * m['wait']:.1f} % | {minutes:,.1f} min |"
        )
    ratio_step = med["device"]["step"] / med["tfdata"]["step"]
    ratio_loop = med["device"]["loop"] / med["tfdata"]["loop"]
    views_step = med["device"]["loop"] / med["tfdata"]["step"]
    print(
        f"\ndevice / tfdata: step alone x{ratio_step:.2f}, whole loop x{ratio_loop:.2f}; "
        f"device loop / step on synthetic views x{views_step:.2f}"
    )
    if args.torch:
        config = sides["device"].exp.config
        gpu = jax.default_backend() == "gpu"
        command = [
            sys.executable,
            os.path.join(ROOT, "benchmarks", "torch_step.py"),
            f"--batch={config.global_batch_size}",
            f"--size={sides['device'].exp.sample_input.shape[1]}",
            f"--width={config.model.width}",
            f"--steps={args.steps}",
            f"--device={'cuda' if gpu else 'cpu'}",
            f"--dtype={'bfloat16' if gpu else 'float32'}",
            f"--modes={args.torch_modes}",
        ]
        print("\n" + " ".join(command[1:]), flush=True)
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        print(result.stdout.strip() or result.stderr.strip()[-2000:], flush=True)
        for line in result.stdout.splitlines():
            mode, rate = line.removeprefix("torch ").split(": ")
            ratio = med["device"]["loop"] / float(rate)
            print(f"ssl_jax device loop / torch {mode} step: x{ratio:.2f}", flush=True)


if __name__ == "__main__":
    main()
