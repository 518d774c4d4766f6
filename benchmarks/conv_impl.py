"""Time one conv layer, and a whole ResNet train step, with each `model.conv_impl` (models/conv.py).

    python benchmarks/conv_impl.py [--batch=64] [--layers] [--resnets]

`--layers`: a 3×3 stride-1 conv at batch B over a grid of feature-map sizes × channels, forward
and forward+backward (gradients of input and kernel) in ms, 'xla' against 'matmul', and the ratio.
`--resnets`: forward+backward img/s of ResNet-18 backbones (28 px ImageNet stem, 32 px CIFAR stem)
with 'xla', 'matmul' and 'auto'. These are the figures behind `CPU_MATMUL_MAX_OUTPUT`: re-run
them on a new machine before changing it. (Both with neither flag.)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402


def best_ms(fn, *args, repeats: int = 3, number: int = 10) -> float:
    """Best of `repeats` means over `number` calls, after one compile call (ms)."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(number):
            jax.block_until_ready(fn(*args))
        times.append((time.perf_counter() - t) / number)
    return 1e3 * min(times)


def layer_figures(batch: int) -> None:
    from ssl_jax.models.conv import Conv2d

    print(f"3×3 conv, stride 1, batch {batch}: ms forward / forward+backward")
    print(f"{'size':>5} {'chans':>5} | {'xla':>15} | {'matmul':>15} | fwd+bwd xla/matmul")
    rng = np.random.default_rng(0)
    grid = [(14, 32), (7, 32), (7, 64), (4, 64), (4, 128), (2, 128), (2, 256), (1, 256), (1, 512)]
    for size, chans in grid:
        x = jnp.asarray(rng.normal(size=(batch, size, size, chans)), jnp.float32)
        row = {}
        for impl in ("xla", "matmul"):
            conv = Conv2d(chans, (3, 3), padding=((1, 1), (1, 1)), impl=impl)
            params = conv.init(jax.random.key(0), x[:1])
            fwd = jax.jit(conv.apply)
            grad = jax.jit(jax.grad(lambda p, x, c=conv: jnp.sum(c.apply(p, x) ** 2), (0, 1)))
            row[impl] = (best_ms(fwd, params, x), best_ms(grad, params, x))
        (xf, xb), (mf, mb) = row["xla"], row["matmul"]
        print(
            f"{size:>5} {chans:>5} | {xf:6.2f} / {xb:6.2f} | {mf:6.2f} / {mb:6.2f} | {xb / mb:5.2f}"
        )


def resnet_figures(batch: int) -> None:
    from ssl_jax.models.resnet import ResNet

    print(f"ResNet-18 backbone forward+backward, batch {batch}: img/s")
    rng = np.random.default_rng(0)
    for stem, size, width in [("imagenet", 28, 0.5), ("imagenet", 28, 1.0), ("cifar", 32, 0.5)]:
        x = jnp.asarray(rng.normal(size=(batch, size, size, 3)), jnp.float32)
        speeds = {}
        for impl in ("xla", "matmul", "auto"):
            model = ResNet(depth=18, stem=stem, width=width, conv_impl=impl)
            variables = model.init(jax.random.key(0), x[:2], train=False)

            def loss(params, x, m=model, v=variables):
                y, _ = m.apply(
                    {"params": params, "batch_stats": v["batch_stats"]},
                    x,
                    train=True,
                    mutable=["batch_stats"],
                )
                return jnp.sum(y**2)

            step = jax.jit(jax.grad(loss))
            speeds[impl] = batch / best_ms(step, variables["params"], x, number=5) * 1e3
        line = "  ".join(f"{k} {v:7.1f}" for k, v in speeds.items())
        ratio = speeds["auto"] / speeds["xla"]
        print(f"{stem:>8} stem {size} px width {width}: {line}   auto/xla ×{ratio:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--layers", action="store_true")
    parser.add_argument("--resnets", action="store_true")
    args = parser.parse_args()
    both = not (args.layers or args.resnets)
    print(f"devices: {len(jax.devices())} × {jax.default_backend()}")
    if args.layers or both:
        layer_figures(args.batch)
    if args.resnets or both:
        resnet_figures(args.batch)


if __name__ == "__main__":
    main()
