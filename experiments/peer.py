"""ssl_jax vs a peer PyTorch library (lightly) on the same CPU: MoCo v2, ResNet-18 width 1, MLP head
512-512-128, batch 64, two views, queue 4096, τ 0.2, SGD; img/s of the step alone (synthetic views)
and of the whole training loop (input pipeline included), side by side in one run.

The peer lives in its own virtualenv, never in ssl_jax's requirements
(`experiments/requirements-peer.txt`):

    python3 -m venv ../peer_venv
    ../peer_venv/bin/pip install -r experiments/requirements-peer.txt
    ../peer_venv/bin/pip install --no-deps torchvision==0.28.0 lightly==1.6.0

(lightly's declared deps — pytorch-lightning, hydra-core, tqdm, ... — are not imported by the modules
used here; `lightly.transforms` needs lightning-utilities and packaging. The torchvision 0.28.0 wheel
pip finds for torch 2.13.0 is a CUDA build whose C ops cannot load with torch 2.13.0+cpu:
`import_lightly` skips their registrations, the models and transforms are Python.)

Side by side (both shapes, 3 alternating rounds of 20 steps each; run from the repository root):

    .venv/bin/python experiments/peer.py --peer=lightly --peer-python=../peer_venv/bin/python \\
        --jax-python=.venv/bin/python [--shapes=fashion28,color32] [--rounds=3] [--steps=20] \\
        [--probe-seconds=180 | --probe-steps=128]

`--jax-override key=value ...` sets fields of the ssl_jax side's config (ablations: e.g.
`seed=1`, or the keys' BN over the whole batch as lightly's:
`method_config.key_bn_group_size=64 method_config.shuffle_bn=False`); the peer still copies its
numbers.

`--threads` (torch intra-op threads) and `--workers` (DataLoader processes) default to the host's
cores; XLA and tf.data use all cores on their own.

One side alone: `--side=jax` (run with ssl_jax's python) or `--side=lightly --numbers='{...}'` (the
peer's python, with the repository root on `PYTHONPATH`: nothing of ours is installed there; the
side-by-side run sets it for its workers); `--what=step,loop` picks the measurements. The numbers are the ssl_jax config's
(`config_numbers`, also on the `--side=jax --serve` worker's READY line); `--print-numbers` prints
them for `--shape` with ssl_jax's python (no torch or lightly import, no compilation) and exits:

    PYTHONPATH=. ../peer_venv/bin/python experiments/peer.py --side=lightly --shape=color32 \
        --numbers="$(.venv/bin/python experiments/peer.py --print-numbers --shape=color32)"

Shapes (`SHAPES`): `fashion28` is Fashion-MNIST 28 px grayscale (1 channel) with the ImageNet stem
(7×7/2 conv + max-pool), `color32` is color_fashion_mnist 32 px RGB (Fashion-MNIST items on photos,
CIFAR-shaped) with the CIFAR stem (3×3/1 conv, no max-pool). The ssl_jax side is
`configs/mocov2_fashion_mnist.py` / `configs/mocov2_color_fashion_mnist.py` with `SHAPES`' stem
and `COMMON`'s numbers set on it (width 1, head, batch, queue, τ); the peer gets those and the
config's own (`config_numbers`: size, channels, mean/std, EMA, peak lr, weight decay), which the
ssl_jax worker reads and the parent passes on (`--numbers`). (Before 2026-11-24 (commit e2aed01) the peer's lr was the
config's base lr × 64/256 while these configs do not scale it: 0.015 against ssl_jax's 0.06.)

- ssl_jax, step: `benchmarks/train_step.py`'s `compiled_step` (the jitted `train.jit_train_step` on
  synthetic uint8 views). Loop: the same jitted step fed by `pipeline.train_iterator` (the tf.data
  input pipeline with the config's augmentation recipe) through `sharding.prefetch_to_device`, as
  `train.train_and_evaluate` runs it (without its logging and checkpoints).
- lightly: torchvision `resnet18` (fc removed; `conv1` replaced for the CIFAR stem or 1 channel,
  `maxpool` → Identity for the CIFAR stem), `lightly.models.modules.MoCoProjectionHead(512, 512, 128)`,
  key encoder a deep copy under `lightly.models.utils.deactivate_requires_grad` and
  `update_momentum`, `batch_shuffle`/`batch_unshuffle` around it (shuffle-BN on one process),
  `lightly.loss.NTXentLoss(temperature, memory_bank_size=(queue, 128))` (InfoNCE of the query against
  its key and the queue, which it updates with the keys), `torch.optim.SGD` momentum 0.9 + wd. Step:
  synthetic float tensors. Loop: a `torch.utils.data.DataLoader` (`--workers` processes, shuffled,
  drop_last) over the same uint8 images with torchvision/lightly transforms: `fashion28` the crop +
  flip + brightness/contrast jitter of `recipes.fashion_mnist_default`, `color32` lightly's
  `MoCoV2Transform(input_size=32, gaussian_blur=0)` (`recipes.mocov2(32, blur=False)`), each wrapped in
  lightly's `MultiViewTransform` for two views. The images come from the ssl_jax worker (the arrays its
  `datasets` module reads) when both sides run; the peer alone reads the Fashion-MNIST IDX files
  (`fashion28`) or draws random uint8 images (`color32`).

Both sides run as persistent worker processes (compiled / warmed up once); the parent sends each a
round of `--steps` timed steps in turn (A B A B: the shared host's load drifts) while the other waits
idle. Step: img/s of the median step over all rounds; loop: images / total time of all rounds. Each
side's data loaders stay alive between rounds and refill their buffers while the other side runs
(tf.data 2 device batches plus its own buffers, the DataLoader `prefetch_factor` × workers), so each
round first runs `--warmup` untimed steps that drain them.

`--probe-seconds=S` then pretrains each side (one at a time) from a fresh model for S seconds of the
whole loop (compilation excluded: the step is already compiled), or `--probe-steps=N` for N steps
of it (accuracy at equal steps: the methods apart from the libraries' speeds), extracts backbone
features (eval-mode BN, no augmentation) of `--probe-train` train images and the whole test split,
and fits the same probe on both (`ssl_jax.evaluate.probe_fit.fit_linear_probe`, in the ssl_jax
worker). Differences
that remain: ssl_jax's cosine lr schedule over the config's epochs vs lightly's constant lr (the
first minutes of a cosine are near its peak), and ssl_jax's shuffle-BN of the keys in groups of 32
(`key_bn_group_size`) vs lightly's `batch_shuffle` on one process (BN over the whole batch); that
last one does not show at 32 px (2026-11-25, commit 6b151ff, 128 steps, seeds 0/1/2: 49.86 ± 3.60 % with groups of
32, 50.66 ± 2.87 % over the whole batch; the same step time).
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from benchmarks._common import PEER_NUMBERS as COMMON  # noqa: E402
from benchmarks._common import PEER_SHAPES as SHAPES  # noqa: E402
from benchmarks._common import peer_config as jax_config  # noqa: E402
from experiments.child_env import checkout_env  # noqa: E402

PEERS = ("lightly",)
FASHION_DIR = "/usr/share/datasets/fashion-mnist"
INSTALL = (
    "the lightly side needs its own virtualenv: python3 -m venv ../peer_venv && "
    "../peer_venv/bin/pip install -r experiments/requirements-peer.txt && "
    "../peer_venv/bin/pip install --no-deps torchvision==0.28.0 lightly==1.6.0"
)


def config_numbers(c) -> dict:
    """The numbers of the ssl_jax config (after `COMMON`'s batch is set) that the peer copies: image
    size and channels, normalisation, EMA, the peak learning rate (`optim.peak_learning_rate`:
    base_lr, scaled by the batch when the config says 'linear') and weight decay."""
    from ssl_jax import optim

    return dict(
        size=int(c.data.image_size),
        channels=int(c.data.channels),
        mean=[float(m) for m in c.data.mean],
        std=[float(v) for v in c.data.std],
        ema=float(c.ema.base),
        lr=optim.peak_learning_rate(c.optim, c.global_batch_size),
        weight_decay=float(c.optim.weight_decay),
    )


# --------------------------------------------------------------------------------------------------
# ssl_jax worker


class JaxSide:
    def __init__(self, shape: str, data_out: str | None, overrides: tuple[str, ...] = ()):
        import jax

        from benchmarks.train_step import compiled_step
        from ssl_jax import train
        from ssl_jax.data import datasets, pipeline
        from ssl_jax.parallel import sharding

        c = jax_config(shape, overrides)
        self.numbers = config_numbers(c)
        self.config, self.jax, self.train = c, jax, train
        if data_out:  # the same images for the peer
            train_x, train_y = _source_arrays(datasets, c.data, c.data.eval_train_split)
            test_x, test_y = _source_arrays(datasets, c.data, c.data.eval_test_split)
            np.savez(data_out, image=train_x, label=train_y, test_image=test_x, test_label=test_y)
        self.step, self.state, self.batch = compiled_step(c)
        self.exp = exp = train.build_experiment(c)
        self.data = sharding.prefetch_to_device(
            pipeline.train_iterator(c, start_step=0), train.PREFETCH_BATCHES, exp.mesh
        )
        self.run(2, "loop")  # warm the pipeline
        self.device = f"{jax.device_count()} × {jax.devices()[0].device_kind}"

    def run(self, steps: int, what: str) -> list[float]:
        times, metrics = [], None
        for _ in range(steps):
            t = time.perf_counter()
            batch = self.batch if what == "step" else next(self.data)
            self.state, metrics = self.step(self.state, batch)
            self.jax.block_until_ready(metrics)
            times.append(time.perf_counter() - t)
        return times

    def reset(self) -> None:
        """A fresh model, optimiser and queue (the probe's pretraining starts from step 0)."""
        train = self.train
        self.state = train.prepare_fresh_state(self.exp, train.init_or_restore(self.exp, None))

    def features(self, path: str, num_train: int) -> None:
        from ssl_jax.evaluate.run_features import extract_features

        variables = {"params": self.state.params, "batch_stats": self.state.batch_stats}
        data, out = self.config.data, {}
        for name, split, limit in (
            ("train", data.eval_train_split, num_train),
            ("test", data.eval_test_split, -1),
        ):
            out[name], out[name + "_label"] = extract_features(
                self.exp, variables, split, limit, batch_size=256
            )
        np.savez(path, **out)


def fit_probe(path: str) -> dict:
    """`probe_fit.fit_linear_probe` (L-BFGS, its l2 grid on a held-out tenth) on saved features."""
    from ssl_jax.evaluate.probe_fit import fit_linear_probe

    with np.load(path) as f:
        r = fit_linear_probe(f["train"], f["train_label"], f["test"], f["test_label"])
    return {k: float(v) for k, v in r.items()}


def _source_arrays(datasets, data_config, split: str) -> tuple[np.ndarray, np.ndarray]:
    """A split's uint8 images [N, H, W, C] and labels, as `datasets` reads them."""
    from ssl_jax.data.sources import color_fashion_mnist, fashion_mnist, source

    paths = datasets._fashion_paths(data_config, split)
    if data_config.name == "fashion_mnist":
        return fashion_mnist.read_split(*paths)

    cfg = source.config_get(data_config, "color_fashion_mnist", None)
    return datasets._color_fashion_arrays(
        *paths,
        split,
        color_fashion_mnist.check_config(cfg),
        color_fashion_mnist.cache_dir(cfg),
    )


# --------------------------------------------------------------------------------------------------
# lightly worker


def import_lightly():
    """torch, torchvision and the lightly modules the benchmark uses, or a clear SystemExit."""
    # The torchvision 0.28.0 wheel that pip finds for torch 2.13.0 is a CUDA build: its C ops
    # (`_C.so`: nms, roi_align, ...) need libc10_cuda.so, which torch 2.13.0+cpu lacks, and
    # `torchvision/_meta_registrations.py` then fails at import. The models and transforms are
    # Python; the meta registrations only serve the detection ops, so they are skipped.
    sys.modules.setdefault(
        "torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations")
    )
    try:
        import lightly
        import torch
        import torchvision
        from lightly.loss import NTXentLoss
        from lightly.models import utils
        from lightly.models.modules import MoCoProjectionHead
        from lightly.transforms import MoCoV2Transform
        from lightly.transforms.multi_view_transform import MultiViewTransform
    except ImportError as e:
        raise SystemExit(f"--side=lightly: cannot import the peer ({e}); {INSTALL}") from e
    return types.SimpleNamespace(
        torch=torch,
        torchvision=torchvision,
        version=f"lightly {lightly.__version__}, torch {torch.__version__}, "
        f"torchvision {torchvision.__version__}",
        NTXentLoss=NTXentLoss,
        utils=utils,
        MoCoProjectionHead=MoCoProjectionHead,
        MoCoV2Transform=MoCoV2Transform,
        MultiViewTransform=MultiViewTransform,
    )


def read_fashion_idx(directory: str = FASHION_DIR) -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST train images [60000, 28, 28, 1] uint8 and labels from the gzipped IDX files."""
    with gzip.open(os.path.join(directory, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28, 1)
    with gzip.open(os.path.join(directory, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    return images, labels


class LightlySide:
    def __init__(self, shape: str, numbers: dict, data: str | None, threads: int, workers: int):
        lt = import_lightly()
        torch = lt.torch
        torch.set_num_threads(threads)
        s = {**SHAPES[shape], **numbers}
        self.lt, self.shape = lt, s
        b, size, ch = COMMON["batch"], s["size"], s["channels"]
        self.reset()
        self.synthetic = (torch.randn(b, ch, size, size), torch.randn(b, ch, size, size))
        self.data = data
        if data:
            with np.load(data) as f:
                images = f["image"]
        elif shape == "fashion28":
            images = read_fashion_idx()[0]
        else:
            images = np.random.default_rng(0).integers(0, 256, (50_000, size, size, ch), np.uint8)
        self.loader = torch.utils.data.DataLoader(
            _Images(images, self.transform(s)),
            batch_size=b,
            shuffle=True,
            drop_last=True,
            num_workers=workers,
            persistent_workers=workers > 0,
        )
        self.batches = iter(self.loader)
        self.run(2, "step")
        self.run(2, "loop")
        self.device = f"cpu ({threads} threads, {workers} DataLoader workers)"

    def reset(self) -> None:
        """A fresh model, optimiser and memory bank (the probe's pretraining starts from step 0)."""
        lt, s = self.lt, self.shape
        torch, nn = lt.torch, lt.torch.nn
        ch = s["channels"]
        assert COMMON["width"] == 1.0, "torchvision's resnet18 is width 1"
        backbone = lt.torchvision.models.resnet18()
        backbone.fc = nn.Identity()
        if s["stem"] == "cifar":
            backbone.conv1 = nn.Conv2d(ch, 64, 3, 1, 1, bias=False)
            backbone.maxpool = nn.Identity()
        elif ch != 3:
            backbone.conv1 = nn.Conv2d(ch, 64, 7, 2, 3, bias=False)
        head = lt.MoCoProjectionHead(512, COMMON["hidden"], COMMON["out_dim"])
        self.online = nn.Sequential(backbone, head)
        self.key = copy.deepcopy(self.online)
        lt.utils.deactivate_requires_grad(self.key)
        self.criterion = lt.NTXentLoss(
            temperature=COMMON["temperature"], memory_bank_size=(COMMON["queue"], COMMON["out_dim"])
        )
        self.opt = torch.optim.SGD(
            self.online.parameters(),
            lr=s["lr"],  # ssl_jax's peak lr (no warm-up or cosine here)
            momentum=0.9,
            weight_decay=s["weight_decay"],
        )
        self.ema = s["ema"]

    def features(self, path: str, num_train: int) -> None:
        """Backbone features (eval-mode BN) of the `--data` file's train (first `num_train`) and
        test images, normalised as in training, no augmentation."""
        torch, T = self.lt.torch, self.lt.torchvision.transforms
        if not self.data:
            raise SystemExit("features: the peer needs --data (the parent's images)")
        s, backbone = self.shape, self.online[0]
        transform = T.Compose([T.ToTensor(), T.Normalize(s["mean"], s["std"])])
        backbone.eval()
        out = {}
        with np.load(self.data) as f, torch.no_grad():
            for name, images, labels in (
                ("train", f["image"][: num_train if num_train > 0 else None], f["label"]),
                ("test", f["test_image"], f["test_label"]),
            ):
                loader = torch.utils.data.DataLoader(_Images(images, transform), batch_size=256)
                out[name] = torch.cat([backbone(x) for x in loader]).numpy()
                out[name + "_label"] = np.asarray(labels[: len(images)], np.int32)
        backbone.train()
        np.savez(path, **out)

    def transform(self, s):
        T = self.lt.torchvision.transforms
        normalize = {"mean": list(s["mean"]), "std": list(s["std"])}
        if s["recipe"] == "mocov2":
            return self.lt.MoCoV2Transform(
                input_size=s["size"], gaussian_blur=0.0, normalize=normalize
            )
        view = T.Compose(
            [
                T.RandomResizedCrop(s["size"], scale=(0.2, 1.0)),
                T.RandomHorizontalFlip(),
                T.RandomApply([T.ColorJitter(0.4, 0.4)], p=0.8),
                T.ToTensor(),
                T.Normalize(**normalize),
            ]
        )
        return self.lt.MultiViewTransform([view, view])

    def next_batch(self):
        try:
            return next(self.batches)
        except StopIteration:
            self.batches = iter(self.loader)
            return next(self.batches)

    def train_step(self, x_query, x_key) -> None:
        torch, utils = self.lt.torch, self.lt.utils
        utils.update_momentum(self.online, self.key, m=self.ema)
        with torch.no_grad():
            x_key, shuffle = utils.batch_shuffle(x_key)
            k = utils.batch_unshuffle(self.key(x_key), shuffle)
        q = self.online(x_query)
        loss = self.criterion(q, k)
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()

    def run(self, steps: int, what: str) -> list[float]:
        times = []
        for _ in range(steps):
            t = time.perf_counter()
            views = self.synthetic if what == "step" else self.next_batch()
            self.train_step(*views)
            times.append(time.perf_counter() - t)
        return times


class _Images:
    """uint8 [N, H, W, C] → PIL images through `transform` (a torch map-style data set)."""

    def __init__(self, images: np.ndarray, transform):
        self.images, self.transform = images, transform

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i):
        from PIL import Image

        image = self.images[i]
        image = Image.fromarray(image[..., 0] if image.shape[-1] == 1 else image)
        return self.transform(image)


# --------------------------------------------------------------------------------------------------
# worker protocol: READY {info} once, then one RESULT [seconds...] line per "<what> <steps>" line


def serve(args) -> None:
    if args.side == "jax":
        side = JaxSide(args.shape, args.data_out, tuple(args.jax_override))
        info = {"device": side.device, "numbers": side.numbers}
    else:
        side = LightlySide(
            args.shape, json.loads(args.numbers), args.data, args.threads, args.workers
        )
        info = {"device": side.device, "version": side.lt.version}
    print("READY " + json.dumps(info), flush=True)
    for line in sys.stdin:
        what, arg = line.split()
        if what in ("step", "loop"):
            side.run(args.warmup, what)  # drains what the loaders prefetched meanwhile
            result = side.run(int(arg), what)
        elif what == "pretrain":
            result = pretrain(side, arg)
        elif what == "features":
            side.features(arg, args.probe_train)
            result = None
        elif what == "probe":
            result = fit_probe(arg)
        print("RESULT " + json.dumps(result), flush=True)


def pretrain(side, budget: str) -> dict:
    """From a fresh model (`side.reset()`), whole-loop steps for a `probe_budget`: "<seconds>s"
    or "<N>" steps. → {"steps", "seconds"}."""
    side.reset()
    timed = budget.endswith("s")
    seconds = float(budget[:-1]) if timed else float("inf")
    max_steps = float("inf") if timed else int(budget)
    t, steps = time.perf_counter(), 0
    while time.perf_counter() - t < seconds and steps < max_steps:
        side.run(1, "loop")
        steps += 1
    return {"steps": steps, "seconds": time.perf_counter() - t}


class Worker:
    def __init__(self, name: str, argv: list[str]):
        self.name = name
        self.proc = subprocess.Popen(  # the peer's venv has no ssl_jax: the checkout on PYTHONPATH
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=checkout_env(),
        )
        self.info = json.loads(self._read("READY"))

    def _read(self, tag: str) -> str:
        for line in self.proc.stdout:
            if line.startswith(tag + " "):
                return line[len(tag) + 1 :]
        raise SystemExit(f"{self.name} worker exited ({self.proc.wait()}) before {tag}")

    def run(self, what: str, arg):
        self.proc.stdin.write(f"{what} {arg}\n")
        self.proc.stdin.flush()
        return json.loads(self._read("RESULT"))

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def compare(args) -> None:
    whats = [w for w in args.what.split(",") if w]
    me = os.path.abspath(__file__)
    common = ["--threads", str(args.threads), "--workers", str(args.workers)]
    common += [f"--probe-train={args.probe_train}"]
    jax_override = ["--jax-override", *args.jax_override] if args.jax_override else []
    rows, probes = [], []
    budget = probe_budget(args)
    for shape in args.shapes.split(","):
        s = SHAPES[shape]
        print(
            f"== {shape}: ResNet-18 {s['stem']} stem ({s['config']}), batch {COMMON['batch']}, "
            f"queue {COMMON['queue']}, τ {COMMON['temperature']}",
            flush=True,
        )
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data.npz")
            sides = (
                ("ssl_jax", args.jax_python, ["--side=jax", f"--data-out={data}", *jax_override]),
                (args.peer, args.peer_python, [f"--side={args.peer}", f"--data={data}"]),
            )
            workers = []
            for name, python, extra in sides:  # one after the other: the peer reads `data`
                t = time.perf_counter()
                python = os.path.abspath(python) if os.sep in python else python  # cwd is ROOT
                if workers:  # the peer copies the ssl_jax config's numbers
                    extra = [*extra, "--numbers=" + json.dumps(workers[0].info["numbers"])]
                argv = [python, me, "--serve", f"--shape={shape}", *extra, *common]
                workers.append(Worker(name, argv))
                print(f"{name} ready in {time.perf_counter() - t:.0f} s: {workers[-1].info}")
            times = {(w.name, what): [] for w in workers for what in whats}
            for r in range(args.rounds):
                for what in whats:
                    for w in workers:
                        seconds = w.run(what, args.steps)
                        times[w.name, what] += seconds
                        print(
                            f"round {r} {what:4s} {w.name:8s} "
                            f"{img_per_sec(seconds, what):8.1f} img/s",
                            flush=True,
                        )
            for what in whats:
                rate = {w.name: img_per_sec(times[w.name, what], what) for w in workers}
                rows.append((shape, what, rate["ssl_jax"], rate[args.peer]))
            if budget:
                for w in workers:  # one at a time, the other idle
                    done = w.run("pretrain", budget)
                    print(f"{w.name}: pretrained {done['steps']} steps in {done['seconds']:.0f} s")
                    features = os.path.join(tmp, f"{w.name}.npz")
                    w.run("features", features)
                    result = workers[0].run("probe", features)  # the same probe for both
                    print(f"{w.name}: probe top-1 {100 * result['top1']:.2f}%", flush=True)
                    probes.append((shape, w.name, done["steps"], done["seconds"], result))
            for w in workers:
                w.close()
    if rows:
        print(
            f"\n{'shape':10s} {'what':5s} {'ssl_jax img/s':>14s} {args.peer + ' img/s':>14s} ratio"
        )
    for shape, what, jax_rate, peer_rate in rows:
        print(
            f"{shape:10s} {what:5s} {jax_rate:14.1f} {peer_rate:14.1f} ×{jax_rate / peer_rate:.2f}"
        )
    if probes:
        after = f"{args.probe_steps} steps" if args.probe_steps else f"{args.probe_seconds:.0f} s"
        print(f"\nlinear probe after {after} of pretraining (whole loop):")
        print(f"{'shape':10s} {'library':8s} {'steps':>6s} {'top-1':>7s} {'top-5':>7s}")
        for shape, name, steps, _, r in probes:
            print(
                f"{shape:10s} {name:8s} {steps:6d} {100 * r['top1']:6.2f}% {100 * r['top5']:6.2f}%"
            )


def probe_budget(args) -> str | None:
    """The workers' "pretrain" argument: "<seconds>s" (`--probe-seconds`), "<N>" (`--probe-steps`)
    or None (no probe)."""
    if args.probe_seconds > 0 and args.probe_steps > 0:
        raise SystemExit("--probe-seconds and --probe-steps: give one budget, not both")
    if args.probe_steps > 0:
        return str(args.probe_steps)
    return f"{args.probe_seconds}s" if args.probe_seconds > 0 else None


def img_per_sec(seconds: list[float], what: str) -> float:
    """Step: img/s of the median step. Loop: images / total time (a loader's hiccups count)."""
    per_step = np.median(seconds) if what == "step" else np.mean(seconds)
    return COMMON["batch"] / float(per_step)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--peer", default="lightly", choices=PEERS)
    p.add_argument("--side", choices=("jax", *PEERS), help="run one side as a worker")
    p.add_argument("--jax-python", default=sys.executable, help="python of ssl_jax's venv")
    p.add_argument("--peer-python", default=None, help="python of the peer's venv")
    p.add_argument("--shapes", default="fashion28,color32", help=f"of {sorted(SHAPES)}")
    p.add_argument("--shape", default="fashion28", choices=sorted(SHAPES), help="(worker)")
    p.add_argument("--what", default="step,loop")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=20, help="timed steps per round")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps before each round")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch threads")
    p.add_argument("--workers", type=int, default=os.cpu_count(), help="DataLoader workers")
    p.add_argument(
        "--probe-seconds",
        type=float,
        default=0,
        help="pretrain each side from scratch this long (whole loop), then linear-probe both",
    )
    p.add_argument(
        "--probe-steps",
        type=int,
        default=0,
        help="pretrain each side from scratch this many whole-loop steps, then linear-probe both",
    )
    p.add_argument(
        "--probe-train", type=int, default=10_000, help="train images of the probe (-1: all)"
    )
    p.add_argument("--serve", action="store_true", help="(worker) answer the parent's rounds")
    p.add_argument(
        "--jax-override", nargs="*", default=[], help="key=value on the ssl_jax side's config"
    )
    p.add_argument("--data", default=None, help="(worker) .npz of the train images")
    p.add_argument("--data-out", default=None, help="(worker) write the train images here")
    p.add_argument(
        "--numbers",
        default=None,
        help="(peer side) JSON of the ssl_jax config's numbers (`config_numbers`; the parent "
        "passes them; by hand: what --print-numbers prints)",
    )
    p.add_argument(
        "--print-numbers",
        action="store_true",
        help="print the --numbers JSON of --shape (ssl_jax's python) and exit",
    )
    args = p.parse_args()
    if args.print_numbers:
        print(json.dumps(config_numbers(jax_config(args.shape, args.jax_override))), flush=True)
        return
    if args.side in PEERS and not args.numbers:
        raise SystemExit(
            f"--side={args.side} needs --numbers (the ssl_jax config's numbers: what "
            f"`experiments/peer.py --print-numbers --shape={args.shape}` prints with ssl_jax's python)"
        )
    if args.side and not args.serve:  # by hand: `--rounds` rounds of each measurement
        side = (
            JaxSide(args.shape, None, tuple(args.jax_override))
            if args.side == "jax"
            else LightlySide(
                args.shape, json.loads(args.numbers), args.data, args.threads, args.workers
            )
        )
        for what in args.what.split(","):
            for r in range(args.rounds):
                side.run(args.warmup, what)
                rate = img_per_sec(side.run(args.steps, what), what)
                print(f"{args.side} {args.shape} {what} round {r}: {rate:.1f} img/s", flush=True)
    elif args.side:
        serve(args)
    else:
        if not args.peer_python:
            raise SystemExit(f"--peer-python: the python of the peer's virtualenv; {INSTALL}")
        compare(args)


if __name__ == "__main__":
    main()
