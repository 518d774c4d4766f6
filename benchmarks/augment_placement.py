"""Host vs device augmentation: where SCE's colour ops (jitter, grayscale, blur, solarize) run.

    python benchmarks/augment_placement.py [--config=configs/sce_cifar10.py] [--batch=64]
        [--steps=20] [--local-data] [--set model.width=0.25 ...]

`data.device_ops=False`: the whole recipe runs in tf.data on the host. `data.device_ops=True`: tf.data
does the crops and flips only, and the colour ops run inside the jitted train step with per-example
keys (`TrainInput.views`), as SCE's official GPU pipeline does. For each placement it prints:
- host: views/s of `pipeline.train_iterator` alone (wall-clock) and views per CPU-second of the
  process (all threads: views/s per fully used core, the figure to compare on a shared machine);
- step: img/s of the jitted train step on synthetic uint8 views already on the devices (the device
  cost of the colour ops, without the input pipeline);
- end-to-end: img/s of the real iterator feeding the step (what a run sees).
The last line gives the device/host ratios. `--local-data` trains on Fashion-MNIST (gray copied to
3 channels, so every colour op runs) for configs whose dataset is not on this machine; on this
CPU-only machine host and device share the same two cores, so the device path cannot win here —
on an accelerator it takes the colour ops off the host CPU.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import jax  # noqa: E402

from benchmarks.train_step import jax_img_per_sec  # noqa: E402
from configs import common  # noqa: E402
from ssl_jax import configs, validation  # noqa: E402


def host_rate(config, batches: int) -> tuple[float, float]:
    """(views/s, views per CPU-second) of the host input pipeline alone."""
    from ssl_jax.data import pipeline

    it = pipeline.train_iterator(config)
    next(it)  # build the pipeline, fill the prefetch buffer
    views = config.global_batch_size * len(config.data.views)
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(batches):
        next(it)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return views * batches / wall, views * batches / cpu


def end_to_end_rate(config, steps: int) -> float:
    """img/s of the real input pipeline feeding the jitted step."""
    from ssl_jax import train
    from ssl_jax.data import pipeline
    from ssl_jax.parallel import sharding

    exp = train.build_experiment(config)
    state = train.init_or_restore(exp, None)
    step = train.jit_train_step(exp, state)
    it = pipeline.train_iterator(config)
    for _ in range(2):  # compile, warm up the pipeline
        state, metrics = step(state, sharding.host_to_global(next(it), exp.mesh))
    jax.block_until_ready(metrics)
    t = time.perf_counter()
    for _ in range(steps):
        state, metrics = step(state, sharding.host_to_global(next(it), exp.mesh))
    jax.block_until_ready(metrics)
    return config.global_batch_size * steps / (time.perf_counter() - t)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--config", default="configs/sce_cifar10.py")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--local-data", action="store_true", help="Fashion-MNIST, 3 channels")
    parser.add_argument("--set", action="append", default=[], help="key=value on the config")
    args = parser.parse_args()
    results = {}
    for device_ops in (False, True):
        config = configs.load(args.config)
        if args.local_data:
            common.fashion_mnist_data(config, channels=3)
        config.global_batch_size = args.batch
        hp = config.method_config
        if "queue_size" in hp:
            # a multiple of the keys per step (B, or 2B in symmetric mode)
            hp.queue_size = max(1, hp.queue_size // (2 * args.batch)) * 2 * args.batch
        for item in args.set:
            configs.apply_override(config, item)
        config.data.device_ops = device_ops
        validation.validate(config, num_devices=jax.device_count())
        where = "device" if device_ops else "host"
        views, views_cpu = host_rate(config, args.steps)
        step = jax_img_per_sec(config, args.steps)
        e2e = end_to_end_rate(config, args.steps)
        results[where] = (views, views_cpu, step, e2e)
        print(
            f"colour ops on {where:6}: host pipeline {views:8.1f} views/s "
            f"({views_cpu:7.1f} views/cpu-s) | step {step:7.1f} img/s | "
            f"end-to-end {e2e:7.1f} img/s",
            flush=True,
        )
    h, d = results["host"], results["device"]
    print(
        f"device / host: host pipeline ×{d[0] / h[0]:.2f} (per cpu-s ×{d[1] / h[1]:.2f}), "
        f"step ×{d[2] / h[2]:.2f}, end-to-end ×{d[3] / h[3]:.2f}  "
        f"[{jax.device_count()} × {jax.devices()[0].device_kind}, {config.model.backbone} "
        f"width {config.model.width}, batch {args.batch}, views {tuple(config.data.views)}]"
    )


if __name__ == "__main__":
    main()
