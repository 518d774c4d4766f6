"""The MoCo v2 train step in plain PyTorch (torch only: no ssl_jax, TensorFlow or ml_collections), to
set beside ssl_jax's step on the same card in one command (`benchmarks/device_pipeline.py --torch`).

    python benchmarks/torch_step.py [--batch=512] [--size=32] [--width=1.0] [--steps=30]
        [--device=cuda] [--dtype=bfloat16] [--modes=eager,compile]

ResNet-18 with the CIFAR stem (`tests/torch_resnet.py`: torchvision's modules and padding) + MLP
head 512-512-128, channels-last, bf16 autocast (float32 on CPU unless asked), resident random views
(no input pipeline, as ssl_jax's "step alone"): EMA key encoder (no grad) on view 2 with shuffled
BN, InfoNCE over [q·k, q·queue]/0.2 with a 4,096-row queue, SGD (momentum 0.9, wd 5e-4), enqueue.
`compile` wraps the online and key encoders in `torch.compile`. Prints one line per mode:
`torch <mode>: <img/s>` (the median of `--steps` steps, each synchronised).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import os
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def torch_resnet() -> type:
    """`TorchResNet` of `tests/torch_resnet.py`, loaded from its file: the tests are no package,
    and this script also runs where only torch is installed (`benchmarks/train_step.py` uses it
    too)."""
    path = os.path.join(ROOT, "tests", "torch_resnet.py")
    spec = importlib.util.spec_from_file_location("torch_resnet", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TorchResNet


def img_per_sec(args, mode: str) -> float:
    import torch
    from torch import nn

    TorchResNet = torch_resnet()
    device = torch.device(args.device)
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[args.dtype]
    trunk = TorchResNet(18, "cifar", args.width, 3)
    feat = trunk(torch.zeros(2, 3, args.size, args.size)).shape[1]
    online = nn.Sequential(trunk, nn.Linear(feat, 512), nn.ReLU(inplace=True), nn.Linear(512, 128))
    online = online.to(device, memory_format=torch.channels_last)
    target = copy.deepcopy(online)
    for p in target.parameters():
        p.requires_grad_(False)
    queue = nn.functional.normalize(torch.randn(4096, 128, device=device), dim=1)
    opt = torch.optim.SGD(online.parameters(), lr=0.06, momentum=0.9, weight_decay=5e-4)
    b = args.batch
    shape = (b, 3, args.size, args.size)
    x1 = torch.randn(shape, device=device).contiguous(memory_format=torch.channels_last)
    x2 = torch.randn(shape, device=device).contiguous(memory_format=torch.channels_last)
    zeros = torch.zeros(b, dtype=torch.long, device=device)
    forward_q, forward_k = online, target
    if mode == "compile":
        forward_q, forward_k = torch.compile(online), torch.compile(target)
    autocast = torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32)

    def step():
        nonlocal queue
        with torch.no_grad():
            for pt, po in zip(target.parameters(), online.parameters()):
                pt.mul_(0.99).add_(po.detach(), alpha=0.01)
            perm = torch.randperm(b, device=device)
            with autocast:
                k = forward_k(x2[perm]).float()
            k = nn.functional.normalize(k, dim=1)[torch.argsort(perm)]
        with autocast:
            q = forward_q(x1).float()
        q = nn.functional.normalize(q, dim=1)
        logits = torch.cat([(q * k).sum(1, keepdim=True), q @ queue.T], 1) / 0.2
        loss = nn.functional.cross_entropy(logits, zeros)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        queue = torch.cat([k, queue[:-b]])

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(3):  # compile, warm
        step()
    sync()
    times = []
    for _ in range(args.steps):
        t = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t)
    times.sort()
    return b / times[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--width", type=float, default=1.0)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--modes", default="eager,compile")
    args = parser.parse_args()
    for mode in args.modes.split(","):
        print(f"torch {mode}: {img_per_sec(args, mode):.1f}", flush=True)


if __name__ == "__main__":
    main()
