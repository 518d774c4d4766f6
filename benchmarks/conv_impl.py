"""Time one conv layer, and a whole ResNet train step, with each `model.conv_impl` (models/conv.py).

    python benchmarks/conv_impl.py [--batch=64] [--layers] [--resnets] [--pool] [--parts] [--barrier]

`--layers`: a 3×3 stride-1 conv at batch B over a grid of feature-map sizes × channels, forward
and forward+backward (gradients of input and kernel) in ms, 'xla', 'matmul' and 'dense'.
`--resnets`: forward+backward img/s of ResNet-18 backbones (28 px ImageNet stem, 32 px CIFAR stem)
with 'xla', 'matmul' and 'auto'. These are the figures behind `CPU_MATMUL_MAX_OUTPUT` and
`CPU_DENSE_MAX_INPUT`: re-run them on a new machine before changing them. `--pool`: the ImageNet
stem's max-pool, `nn.max_pool` against `pool.slice_max_pool` (what `max_pool` uses on CPU).
`--parts`: every conv of the 32-px ResNet-18 (CIFAR stem) with 'auto', its forward, kernel
gradient and input gradient apart in ms, beside PyTorch's (when it imports) on as many threads,
and their totals weighted by how often each conv occurs (where a 32-px MoCo v2 step's conv time
goes: two forwards, query and key, one of each gradient).
`--barrier`: the whole MoCo v2 train step of `experiments/peer.py`'s two shapes (28 px ImageNet
stem, 32 px CIFAR stem; ResNet-18 width 1, batch 64) with and without `conv.fusion_barrier`
(`CPU_FUSION_BARRIER`), both compiled in one process and timed in `--rounds` alternating rounds.
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import ssl_jax  # noqa: F401  (its XLA:CPU flags, before jax.devices() starts the backend)


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
    from ssl_jax.models.conv import CPU_DENSE_MAX_INPUT, Conv2d

    print(f"3×3 conv, stride 1, batch {batch}: ms forward / forward+backward ('dense' on maps of")
    print(f"at most {CPU_DENSE_MAX_INPUT} px, where its matrix is small)")
    impls = ("xla", "matmul", "dense")
    print(f"{'size':>5} {'chans':>5} | " + " | ".join(f"{i:>15}" for i in impls))
    rng = np.random.default_rng(0)
    grid = [(14, 32), (7, 32), (7, 64), (4, 64), (4, 128), (2, 128), (2, 256), (1, 256), (1, 512)]
    for size, chans in grid:
        x = jnp.asarray(rng.normal(size=(batch, size, size, chans)), jnp.float32)
        cells = []
        for impl in impls:
            if impl == "dense" and size * size > CPU_DENSE_MAX_INPUT:
                cells.append(f"{'–':>15}")
                continue
            conv = Conv2d(chans, (3, 3), padding=((1, 1), (1, 1)), impl=impl)
            params = conv.init(jax.random.key(0), x[:1])
            fwd = jax.jit(conv.apply)
            grad = jax.jit(jax.grad(lambda p, x, c=conv: jnp.sum(c.apply(p, x) ** 2), (0, 1)))
            cells.append(f"{best_ms(fwd, params, x):6.2f} / {best_ms(grad, params, x):6.2f}")
        print(f"{size:>5} {chans:>5} | " + " | ".join(cells))


def pool_figures() -> None:
    """The ImageNet stem's max-pool (3/2, pad 1): `nn.max_pool` against `pool.slice_max_pool`."""
    import flax.linen as nn

    from ssl_jax.models.pool import slice_max_pool

    print("stem max-pool 3/2 pad 1: ms forward / forward+backward")
    rng = np.random.default_rng(0)
    args = ((3, 3), (2, 2), ((1, 1), (1, 1)))
    pools = {
        "nn.max_pool": lambda x: nn.max_pool(x, args[0], strides=args[1], padding=args[2]),
        "slice_max_pool": lambda x: slice_max_pool(x, *args),
    }
    for shape in [(64, 14, 14, 64), (8, 112, 112, 64)]:
        x = jnp.asarray(rng.normal(size=shape), jnp.float32)
        cells = []
        for name, pool in pools.items():
            grad = jax.jit(jax.grad(lambda x, pool=pool: jnp.sum(pool(x) ** 2)))
            cells.append(f"{name} {best_ms(jax.jit(pool), x):6.2f} / {best_ms(grad, x):6.2f}")
        print(f"{str(shape):>18} | " + " | ".join(cells))


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


# (input side, in → out channels, kernel, stride, count) of ResNet-18 with the CIFAR stem at 32 px
RESNET18_CIFAR32 = (
    (32, 3, 64, 3, 1, 1),
    (32, 64, 64, 3, 1, 4),
    (32, 64, 128, 3, 2, 1),
    (32, 64, 128, 1, 2, 1),
    (16, 128, 128, 3, 1, 3),
    (16, 128, 256, 3, 2, 1),
    (16, 128, 256, 1, 2, 1),
    (8, 256, 256, 3, 1, 3),
    (8, 256, 512, 3, 2, 1),
    (8, 256, 512, 1, 2, 1),
    (4, 512, 512, 3, 1, 3),
)


def torch_parts_ms(batch, side, cin, cout, k, stride):
    """PyTorch's forward / kernel gradient / input gradient of one conv (ms), or None."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(os.cpu_count() or 1)
    conv = torch.nn.Conv2d(cin, cout, k, stride, k // 2, bias=False)
    x = torch.randn(batch, cin, side, side, requires_grad=True)
    g = torch.randn_like(conv(x))

    def forward():
        with torch.no_grad():
            conv(x)

    kernel = lambda: torch.autograd.grad(conv(x), conv.weight, g)  # noqa: E731
    inputs = lambda: torch.autograd.grad(conv(x), x, g)  # noqa: E731
    fwd = best_ms(forward)  # (its block_until_ready passes torch tensors through)
    # autograd.grad re-runs the forward: subtract it, as the JAX columns time the vjp alone
    return fwd, best_ms(kernel) - fwd, best_ms(inputs) - fwd


def parts_figures(batch: int) -> None:
    from ssl_jax.models.conv import Conv2d

    print(
        f"ResNet-18, CIFAR stem, 32 px, batch {batch}, 'auto': ms forward / kernel grad / input grad"
    )
    rng = np.random.default_rng(0)
    totals = {"jax": np.zeros(3), "torch": np.zeros(3)}
    for side, cin, cout, k, stride, count in RESNET18_CIFAR32:
        x = jnp.asarray(rng.normal(size=(batch, side, side, cin)), jnp.float32)
        conv = Conv2d(cout, (k, k), (stride, stride), padding=((k // 2,) * 2,) * 2)
        params = conv.init(jax.random.key(0), x[:1])
        g = jnp.asarray(rng.normal(size=conv.apply(params, x).shape), jnp.float32)
        fwd = jax.jit(conv.apply)
        kernel = jax.jit(lambda p, x, g, c=conv: jax.vjp(lambda p: c.apply(p, x), p)[1](g))
        inputs = jax.jit(lambda p, x, g, c=conv: jax.vjp(lambda x: c.apply(p, x), x)[1](g))
        ours = np.array(
            [best_ms(fwd, params, x), best_ms(kernel, params, x, g), best_ms(inputs, params, x, g)]
        )
        theirs = torch_parts_ms(batch, side, cin, cout, k, stride)
        totals["jax"] += count * ours
        row = " / ".join(f"{v:6.2f}" for v in ours)
        if theirs is not None:
            totals["torch"] += count * np.array(theirs)
            row += "  | torch " + " / ".join(f"{v:6.2f}" for v in theirs)
        print(f"{side:>3} px {cin:>3} → {cout:<3} {k}×{k} s{stride} ×{count} | {row}")
    for name, (f, kg, ig) in totals.items():
        if f:
            print(
                f"{name}: weighted forward {f:.0f}, kernel grad {kg:.0f}, input grad {ig:.0f} ms; "
                f"a MoCo v2 step's convs (2 forwards + both grads) {2 * f + kg + ig:.0f} ms"
            )


def barrier_figures(rounds: int, steps: int = 4) -> None:
    from benchmarks._common import PEER_SHAPES, peer_config
    from benchmarks.train_step import alternate_rounds, compiled_step
    from ssl_jax.models import conv

    print("MoCo v2 step, ResNet-18 width 1, batch 64, conv.fusion_barrier on / off: img/s")
    for shape in PEER_SHAPES:
        compiled = {}
        try:
            for barrier in (True, False):
                conv.CPU_FUSION_BARRIER = barrier  # read when the step is traced
                compiled[barrier] = compiled_step(peer_config(shape))
        finally:
            conv.CPU_FUSION_BARRIER = True
        times = alternate_rounds(compiled, rounds, steps)  # prints each round's median
        batch = compiled[True][2]["index"].shape[0]
        speed = {k: batch / np.median(v) for k, v in times.items()}
        print(
            f"{shape}: barrier {speed[True]:.1f}, none {speed[False]:.1f} img/s "
            f"(×{speed[True] / speed[False]:.2f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--layers", action="store_true")
    parser.add_argument("--resnets", action="store_true")
    parser.add_argument("--pool", action="store_true")
    parser.add_argument("--parts", action="store_true")
    parser.add_argument("--barrier", action="store_true")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of --barrier")
    args = parser.parse_args()
    both = not (args.layers or args.resnets or args.pool or args.parts or args.barrier)
    print(f"devices: {len(jax.devices())} × {jax.default_backend()}")
    if args.layers or both:
        layer_figures(args.batch)
    if args.resnets or both:
        resnet_figures(args.batch)
    if args.pool or both:
        pool_figures()
    if args.parts or both:
        parts_figures(args.batch)
    if args.barrier or both:
        barrier_figures(args.rounds)


if __name__ == "__main__":
    main()
