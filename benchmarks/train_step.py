"""img/s of the jitted MoCo v2 train step for a config, and of the same model/batch step in plain PyTorch.

    python benchmarks/train_step.py --config=configs/mocov2_cifar10.py --batch=64 [--steps=10]
        [--torch] [--override model.width=0.5 ...]

The JAX side is `train.jit_train_step` on synthetic uint8 views (no input pipeline) on the current devices.
The PyTorch side (`--torch`, needs `pip install torch==2.13.0`) is the same MoCo v2 step written here: online
ResNet + MLP head forward/backward on view 1, EMA key encoder (no grad) on view 2, InfoNCE over
[q·k, q·queue]/τ, SGD with momentum + weight decay, EMA and enqueue. The ResNet is tests/torch_resnet.py
(torchvision's module names and padding). Prints img/s of both and the ratio JAX / PyTorch.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import jax  # noqa: E402
import numpy as np  # noqa: E402

from ssl_jax import configs  # noqa: E402


def view_size(config) -> int:
    from ssl_jax.train import _view_size

    return _view_size(config, 0)


def jax_img_per_sec(config, steps: int) -> float:
    from ssl_jax import sharding, train

    exp = train.build_experiment(config)
    state = train.init_or_restore(exp, None)
    step = train.jit_train_step(exp, state)
    size, b = view_size(config), config.global_batch_size
    rng = np.random.default_rng(0)
    batch = {
        "views": tuple(
            rng.integers(0, 256, (b, size, size, config.data.channels), dtype=np.uint8)
            for _ in config.data.views
        ),
        "index": np.arange(b, dtype=np.int32),
        "label": np.zeros(b, np.int32),
    }
    batch = sharding.host_to_global(batch, exp.mesh)
    state, metrics = step(state, batch)  # compile
    state, metrics = step(state, batch)
    jax.block_until_ready(metrics)
    times = []
    for _ in range(steps):
        t = time.perf_counter()
        state, metrics = step(state, batch)
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - t)
    return b / float(np.median(times))


def torch_img_per_sec(config, steps: int, threads: int) -> float:
    import copy

    import torch
    from torch import nn

    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from torch_resnet import TorchResNet

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
    parser.add_argument("--config", default="configs/mocov2_cifar10.py")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--torch", action="store_true", help="also time the PyTorch step")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--dtype", default=None, help="float32 | bfloat16 (JAX compute dtype)")
    parser.add_argument("--override", nargs="*", default=[], help="key=value on the config")
    args = parser.parse_args()
    config = configs.load(args.config)
    config.global_batch_size = args.batch
    config.method_config.queue_size = max(
        args.batch, config.method_config.queue_size // args.batch * args.batch
    )
    if args.dtype:
        config.model.dtype = args.dtype
    for item in args.override:
        configs.apply_override(config, item)
    print(
        f"devices: {jax.device_count()} × {jax.devices()[0].device_kind}; "
        f"{config.model.backbone} {config.model.stem} stem width {config.model.width}, "
        f"{view_size(config)} px, batch {args.batch}, {config.model.dtype}",
        flush=True,
    )
    jax_rate = jax_img_per_sec(config, args.steps)
    print(f"JAX     {jax_rate:8.1f} img/s", flush=True)
    if args.torch:
        torch_rate = torch_img_per_sec(config, args.steps, args.threads)
        print(f"PyTorch {torch_rate:8.1f} img/s  ({args.threads} threads)")
        print(f"ratio JAX / PyTorch = {jax_rate / torch_rate:.2f}")


if __name__ == "__main__":
    main()
