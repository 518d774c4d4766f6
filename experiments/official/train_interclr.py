"""InterCLR as mmselfsup 0.x trains it (`checkouts.CHECKOUTS['mmselfsup']`), on our data at our
budget: the official `InterCLRMoCo` (its `forward_train`: the EMA before the keys, shuffle-BN, the
intra loss, the inter branch's positive and semi-hard negative sampling, the MarginNCE loss, the
queue, the memory update), `InterCLRMemory` (bank, online labels, centroids, small clusters),
`ContrastiveHead`, `MoCoV2Neck`, `BaseModel.train_step`, `DistOptimizerHook`, and `InterCLRHook`
(the faiss k-means of `utils/clustering.py` on the `Extractor`'s features before the run, and
offline every `interval` epochs), built through the official `models/builder.py` and called in the
order of mmcv 1.x's `EpochBasedRunner`. Imported by `harness.py` (its `METHODS`); the shims are
`checkouts.SHIMS['mmselfsup']`.

mmcv-full 1.x does not install here: PyPI has only its source (mmcv-full 1.7.2), whose setup.py
imports `pkg_resources` (refused in pip's isolated build); with setuptools < 70 and
`--no-build-isolation` the C++ build of its ops against torch 2.13 had not finished after 10 minutes
(`MMCV_WITH_OPS=1 MAX_JOBS=1`, 2026-12-06), and importing mmselfsup's packages also pulls mmcls and
timm. So the files the harness runs are imported one by one under packages whose `__init__` is
not run (`package_stubs`), with stand-ins for mmcv's registry, base classes, runner and progress
bar (`mmcv_stubs`, `Runner`) only. The torch.distributed calls of the official code run as they
are, in a gloo process group of one process (`one_process_group`).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import sys
import tempfile
import types

from experiments.official import common

# The official files the harness imports, in dependency order (utils first: `from mmselfsup.utils
# import ...` resolves a name through `package_stubs`' lazy `mmselfsup.utils`).
MODULES = (
    "mmselfsup.models.builder",
    "mmselfsup.models.heads.contrastive_head",
    "mmselfsup.models.necks.mocov2_neck",
    "mmselfsup.models.memories.interclr_memory",
    "mmselfsup.models.algorithms.base",
    "mmselfsup.models.algorithms.interclr_moco",
    "mmselfsup.core.hooks.optimizer_hook",
    "mmselfsup.core.hooks.interclr_hook",
    "mmselfsup.utils.clustering",
)

# `mmselfsup/utils/__init__.py:2-14`: each name the InterCLR files import, from its own module.
UTILS = {
    "AliasMethod": "alias_multinomial",
    "batch_shuffle_ddp": "batch_shuffle",
    "batch_unshuffle_ddp": "batch_shuffle",
    "dist_forward_collect": "collect",
    "nondist_forward_collect": "collect",
    "Extractor": "extractor",
    "concat_all_gather": "gather",
    "gather_tensors": "gather",
    "gather_tensors_batch": "gather",
}

PACKAGES = (
    "mmselfsup",
    "mmselfsup.models",
    "mmselfsup.models.algorithms",
    "mmselfsup.models.heads",
    "mmselfsup.models.necks",
    "mmselfsup.models.memories",
    "mmselfsup.core",
    "mmselfsup.core.hooks",
    "mmselfsup.utils",
)

# mmcv's hook priorities (mmcv/runner/priority.py) as `register_training_hooks` gives them.
PRIORITY = {"lr": 10, "optimizer": 40, "custom": 50}


class Registry:
    """mmcv.utils.Registry for one process: `register_module` (decorator or `module=`) and
    `build(cfg)` = the registered class called with the cfg's other keys (`build_from_cfg`)."""

    def __init__(self, name, parent=None, **kwargs):
        self.name, self.parent, self.classes = name, parent, {}

    def register_module(self, name=None, force=False, module=None):
        def put(cls):
            self.classes[name or cls.__name__] = cls
            return cls

        return put(module) if module is not None else put

    def get(self, key):
        if key in self.classes:
            return self.classes[key]
        return self.parent.get(key) if self.parent else None

    def build(self, cfg, default_args=None):
        return build_from_cfg(cfg, self, default_args)


def build_from_cfg(cfg, registry, default_args=None):
    args = {**dict(cfg), **(default_args or {})}
    kind = args.pop("type")
    cls = registry.get(kind)
    if cls is None:
        raise KeyError(f"{kind} is not in the {registry.name} registry")
    return cls(**args)


def mmcv_stubs() -> dict[str, types.ModuleType]:
    """`mmcv`, `mmcv.runner`, `mmcv.utils`, `mmcv.cnn`: the names the InterCLR files and their
    imports use (`SHIMS`), each as mmcv 1.x behaves with one process and no init_cfg."""
    import torch
    import torch.distributed as dist

    class BaseModule(torch.nn.Module):  # mmcv/runner/base_module.py:56-110 without an init_cfg
        def __init__(self, init_cfg=None):
            super().__init__()
            self.init_cfg, self._is_init = init_cfg, False

        def init_weights(self):
            if not self._is_init:
                for m in self.children():
                    if hasattr(m, "init_weights"):
                        m.init_weights()
            self._is_init = True

    class Hook:  # mmcv/runner/hooks/hook.py: every stage a no-op, its interval helpers
        def every_n_epochs(self, runner, n):
            return (runner.epoch + 1) % n == 0 if n > 0 else False

        def every_n_iters(self, runner, n):
            return (runner.iter + 1) % n == 0 if n > 0 else False

        def is_last_iter(self, runner):
            return runner.iter + 1 == runner.max_iters

    def get_dist_info():
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1

    def auto_fp16(apply_to=None, out_fp32=False):  # fp16 off: the function as it is
        return lambda function: function

    class ProgressBar:  # the extractor's progress, not shown
        def __init__(self, *args, **kwargs):
            pass

        def update(self, *args, **kwargs):
            pass

    def digit_version(version):
        return tuple(int(p) for p in version.split("+")[0].split(".")[:3] if p.isdigit())

    mmcv = types.ModuleType("mmcv")
    mmcv.ProgressBar, mmcv.__version__ = ProgressBar, "1.7.2 (stand-in)"
    runner = types.ModuleType("mmcv.runner")
    runner.BaseModule, runner.Hook, runner.HOOKS = BaseModule, Hook, Registry("hook")
    runner.get_dist_info, runner.auto_fp16 = get_dist_info, auto_fp16
    runner.OptimizerHook = runner.Fp16OptimizerHook = Hook
    runner.allreduce_grads = None  # imported by optimizer_hook.py, not called with one process
    utils = types.ModuleType("mmcv.utils")
    utils.Registry, utils.build_from_cfg, utils.digit_version = (
        Registry,
        build_from_cfg,
        digit_version,
    )
    utils.print_log = lambda msg, logger=None, level=None: print(msg, flush=True)
    utils.TORCH_VERSION = torch.__version__
    utils._BatchNorm = torch.nn.modules.batchnorm._BatchNorm
    cnn = types.ModuleType("mmcv.cnn")
    cnn.MODELS = Registry("model")
    mmcv.runner, mmcv.utils, mmcv.cnn = runner, utils, cnn
    return {"mmcv": mmcv, "mmcv.runner": runner, "mmcv.utils": utils, "mmcv.cnn": cnn}


class LazyUtils(types.ModuleType):
    """`mmselfsup.utils` without its `__init__`: a name is taken from its official module
    (`UTILS`) when first imported."""

    def __getattr__(self, name):
        if name not in UTILS:
            raise AttributeError(name)
        value = getattr(importlib.import_module(f"mmselfsup.utils.{UTILS[name]}"), name)
        setattr(self, name, value)
        return value


def package_stubs(path: str, build_dataloader) -> dict[str, types.ModuleType]:
    """The mmselfsup packages as folders of the checkout whose `__init__` is not run, and
    `mmselfsup.datasets` with only `build_dataloader` (the one the `Extractor` calls)."""
    out = {}
    for name in PACKAGES:
        module = (LazyUtils if name == "mmselfsup.utils" else types.ModuleType)(name)
        module.__path__ = [os.path.join(path, *name.split("."))]
        out[name] = module
    datasets = types.ModuleType("mmselfsup.datasets")
    datasets.build_dataloader = build_dataloader
    out["mmselfsup.datasets"] = out["mmselfsup"].datasets = datasets
    for name, module in out.items():
        parent, _, child = name.rpartition(".")
        if parent in out:
            setattr(out[parent], child, module)
    return out


class CpuTorch:
    """`torch` as the InterCLR files see it on a CPU: `device='cuda'` is dropped from `zeros` and
    `ones`, `torch.cuda.LongTensor` is `torch.LongTensor`; everything else is torch's own."""

    def __init__(self, torch):
        self._torch = torch
        self.cuda = types.SimpleNamespace(LongTensor=torch.LongTensor)

    def __getattr__(self, name):
        return getattr(self._torch, name)

    def zeros(self, *args, device=None, **kwargs):
        return self._torch.zeros(*args, **kwargs)

    def ones(self, *args, device=None, **kwargs):
        return self._torch.ones(*args, **kwargs)


class CpuFaiss:
    """`faiss` as `utils/clustering.py:run_kmeans` sees it with faiss-cpu: the GPU flat index
    (:100-104) is faiss's `IndexFlatL2` (the same exact L2 search), `Clustering` has faiss 1.6's
    `obj`; the rest is faiss's own."""

    def __init__(self, faiss):
        self._faiss = faiss

    def __getattr__(self, name):
        return getattr(self._faiss, name)

    def StandardGpuResources(self):  # noqa: N802 (faiss's name)
        return None

    def GpuIndexFlatConfig(self):  # noqa: N802
        return types.SimpleNamespace()

    def GpuIndexFlatL2(self, resources, dim, config):  # noqa: N802
        return self._faiss.IndexFlatL2(dim)

    def Clustering(self, dim, k):  # noqa: N802
        """faiss's `Clustering` with faiss 1.6's `obj` (each iteration's objective, :109), which
        later faiss keeps in `iteration_stats`."""
        import numpy as np

        class Clustering(self._faiss.Clustering):
            @property
            def obj(self):
                stats = self.iteration_stats
                return np.array([stats.at(i).obj for i in range(stats.size())])

        return Clustering(dim, k)

    def vector_to_array(self, vector):
        return vector if hasattr(vector, "dtype") else self._faiss.vector_to_array(vector)


@contextlib.contextmanager
def one_process_group(folder: str):
    """`init_dist` (tools/train.py:138) for one CPU process: a gloo group of world size 1, so
    the official broadcasts, all-gathers, all-reduces and barriers run as they are."""
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"file://{os.path.join(folder, 'store')}", rank=0, world_size=1
    )
    try:
        yield
    finally:
        dist.destroy_process_group()


@contextlib.contextmanager
def cuda_identity():
    """`.cuda()` on a tensor or module returns it (CPU tensors); undone after."""
    import torch

    saved = torch.Tensor.cuda, torch.nn.Module.cuda
    torch.Tensor.cuda = lambda self, *a, **k: self
    torch.nn.Module.cuda = lambda self, *a, **k: self
    try:
        yield
    finally:
        torch.Tensor.cuda, torch.nn.Module.cuda = saved


class OneProcess:
    """`MMDistributedDataParallel` (apis/train.py:123) with one process: the module as `.module`,
    called and `train_step`ped directly (the gradient all-reduce of one process is the identity)."""

    def __init__(self, module):
        self.module = module

    def __call__(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def train_step(self, data, optimizer):
        return self.module.train_step(data, optimizer)

    def __getattr__(self, name):  # train(), eval(), parameters(), ...
        return getattr(self.module, name)


class CosineLr:
    """mmcv's `CosineAnnealingLrUpdaterHook(min_lr=0)`, by epoch (the config's `lr_config`): each
    group's lr set before every epoch to `annealing_cos(lr0, 0, epoch / max_epochs)`."""

    def before_run(self, runner):
        self.base = [
            group.setdefault("initial_lr", group["lr"]) for group in runner.optimizer.param_groups
        ]

    def before_train_epoch(self, runner):
        factor = runner.epoch / runner.max_epochs
        for group, lr in zip(runner.optimizer.param_groups, self.base):
            group["lr"] = 0.5 * lr * (math.cos(math.pi * factor) + 1)


class Runner:
    """mmcv 1.x's `EpochBasedRunner.run` / `.train` (epoch_based_runner.py:42-59) for one process:
    `before_run`; per epoch `model.train()`, `before_train_epoch`, per batch `before_train_iter`,
    `model.train_step`, `after_train_iter`, `iter += 1`; then `after_train_epoch`, `epoch += 1`;
    the hooks in mmcv's priority order. The last epoch is cut at `steps`; the loss is kept every
    `LOG_EVERY` steps (measurement only)."""

    def __init__(self, model, optimizer, work_dir: str, max_epochs: int, per_epoch: int):
        import logging

        self.model, self.optimizer, self.work_dir = OneProcess(model), optimizer, work_dir
        self.max_epochs, self.max_iters = max_epochs, max_epochs * per_epoch
        self.epoch = self.iter = self.rank = 0
        self.logger, self.hooks, self.curve = logging.getLogger("mmselfsup"), [], []

    def register_hook(self, hook, priority: int) -> None:
        self.hooks.append((priority, len(self.hooks), hook))
        self.hooks.sort(key=lambda item: item[:2])

    def call_hook(self, stage: str) -> None:
        for _, _, hook in self.hooks:
            if hasattr(hook, stage):
                getattr(hook, stage)(self)

    def run(self, loader, steps: int) -> None:
        per_epoch = len(loader)
        self.call_hook("before_run")
        for epoch in range(self.max_epochs):
            self.model.train()
            self.call_hook("before_train_epoch")
            for batch in common.Cut(loader, min(per_epoch, steps - epoch * per_epoch)):
                self.call_hook("before_train_iter")
                self.outputs = self.model.train_step(batch, self.optimizer)
                self.call_hook("after_train_iter")
                self.iter += 1
                if self.iter % common.LOG_EVERY == 0:
                    log = self.outputs["log_vars"]
                    self.curve.append([self.iter, round(float(log["loss"]), 5)])
                    print(
                        f"step {self.iter} | " + " ".join(f"{k} {v:.4f}" for k, v in log.items()),
                        flush=True,
                    )
            self.call_hook("after_train_epoch")
            self.epoch += 1
        self.call_hook("after_run")


class MultiView:
    """`MultiViewDataset.__getitem__` (datasets/multi_view.py:61): `dict(img=[view, view],
    idx=i)` from our PIL data set whose transform gives the two views."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i):
        return dict(img=list(self.dataset[i][0]), idx=i)


def single_view(images, transform):
    """`SingleViewDataset` (datasets/single_view.py:34) for the extractor, a torch `Dataset` as
    `Extractor` requires (extractor.py:34): `dict(img=...)` of each image through `transform`
    (ToTensor, Normalize: the eval transform)."""
    import torch
    from PIL import Image

    class SingleView(torch.utils.data.Dataset):
        def __init__(self):
            self.images = [Image.fromarray(x, mode="L") for x in images]

        def __len__(self) -> int:
            return len(self.images)

        def __getitem__(self, i):
            return dict(img=transform(self.images[i]))

    return SingleView()


def build_dataloader(dataset, samples_per_gpu, workers_per_gpu, dist=True, shuffle=False, **kw):
    """`mmselfsup.datasets.build_dataloader` as the `Extractor` calls it (shuffle off): the data set
    in order (its DistributedSampler of one process), batch `samples_per_gpu`, no workers."""
    import torch

    return torch.utils.data.DataLoader(dataset, batch_size=samples_per_gpu, shuffle=shuffle)


def model_cfg(n: dict) -> dict:
    """`configs/selfsup/_base_/models/interclr-moco.py` with our numbers (`runner.numbers`)."""
    return dict(
        type="InterCLRMoCo",
        queue_len=n["queue"],
        feat_dim=n["out_dim"],
        momentum=n["momentum_ema"],
        backbone=dict(type="OurResNet"),
        neck=dict(
            type="MoCoV2Neck",
            in_channels=n["feature_dim"],
            hid_channels=n["hidden"],
            out_channels=n["out_dim"],
            with_avg_pool=True,
        ),
        head=dict(type="ContrastiveHead", temperature=n["temperature"]),
        memory_bank=dict(
            type="InterCLRMemory",
            length=n["train_subset"],
            feat_dim=n["out_dim"],
            momentum=n["bank_momentum"],
            num_classes=n["num_clusters"],
            min_cluster=n["min_cluster"],
            debug=False,
        ),
        online_labels=n["online_labels"],
        neg_num=n["num_negatives"],
        neg_sampling=n["sampler"],
        semihard_neg_pool_num=n["pool_size"],
        semieasy_neg_pool_num=n["pool_size"],
        intra_cos_marign_loss=False,
        intra_cos_margin=0,
        inter_cos_marign_loss=True,
        inter_cos_margin=n["margin"],
        intra_loss_weight=n["intra_weight"],
        inter_loss_weight=n["inter_weight"],
        share_neck=True,
        num_classes=n["num_clusters"],
    )


def hook_cfg(n: dict, extract_set) -> dict:
    """The config's `custom_hooks` InterCLRHook (imagenet_interclr-moco.py:63-87) with our
    numbers and `dist_mode=True` as apis/train.py:175 adds it; `interval` our offline period."""
    return dict(
        type="InterCLRHook",
        extractor=dict(samples_per_gpu=256, workers_per_gpu=0, dataset=extract_set),
        clustering=dict(type="Kmeans", k=n["num_clusters"], pca_dim=-1),
        centroids_update_interval=n["centroid_every_steps"],
        deal_with_small_clusters_interval=1,
        evaluate_interval=50,
        warmup_epochs=0,
        init_memory=True,
        initial=True,
        online_labels=n["online_labels"],
        interval=n["interval"],
        dist_mode=True,
        data_loaders=None,
    )


def train_interclr(path: str, numbers: dict, base_encoder=None):
    """InterCLR as `tools/train.py` → `apis/train.py:train_model` runs the config with our
    numbers: seeds, `build_algorithm(cfg.model)`, `init_weights()`, SGD over all parameters,
    hooks (lr, `DistOptimizerHook`, `InterCLRHook`) and the runner. Returns (the InterCLRMoCo
    module, the loss curve, {"encoder": the query backbone, "cluster_sizes": the last labels'
    smallest and largest cluster})."""
    import numpy as np
    import torch

    n = numbers
    try:
        import faiss
    except ImportError:
        raise SystemExit(
            "error: official interclr clusters with faiss: pip install faiss-cpu"
        ) from None
    # set_random_seed (apis/train.py): the official code draws from numpy's global RNG
    np.random.seed(n["seed"])  # noqa: NPY002
    view = common.ops_to_transforms(n["ops"], n["mean"], n["std"])
    loader = common.seeded_loader(n, lambda image: (view(image), view(image)), wrap=MultiView)
    plain = common.ops_to_transforms([], n["mean"], n["std"])
    extract_set = single_view(common.read_subset(n)[0], plain)
    make = common.encoder_factory(n, base_encoder)

    class OurResNet(torch.nn.Module):  # the config's backbone: ours, its pooled map as a 1-tuple
        def __init__(self):
            super().__init__()
            self.net = make(1)
            self.net.fc = torch.nn.Identity()

        def forward(self, x):
            return (self.net(x)[:, :, None, None],)

    stubs = {**mmcv_stubs(), **package_stubs(path, build_dataloader)}
    modules = dict(zip(MODULES, common.import_official(path, *MODULES, stubs=stubs)))
    for name in (
        "mmselfsup.models.algorithms.interclr_moco",
        "mmselfsup.models.memories.interclr_memory",
    ):
        modules[name].torch = CpuTorch(torch)
    modules["mmselfsup.utils.clustering"].faiss = CpuFaiss(faiss)
    builder = modules["mmselfsup.models.builder"]
    builder.BACKBONES.register_module(name="OurResNet", module=OurResNet)
    hooks = stubs["mmcv.runner"].HOOKS
    per_epoch = len(loader)
    epochs = math.ceil(n["steps"] / per_epoch)
    with tempfile.TemporaryDirectory() as work_dir, cuda_identity(), one_process_group(work_dir):
        model = builder.build_algorithm(model_cfg(n))
        model.init_weights()
        optimizer = common.sgd(model, n)
        runner = Runner(model, optimizer, work_dir, epochs, per_epoch)
        runner.register_hook(CosineLr(), PRIORITY["lr"])
        runner.register_hook(hooks.build(dict(type="DistOptimizerHook")), PRIORITY["optimizer"])
        runner.register_hook(hooks.build(hook_cfg(n, extract_set)), PRIORITY["custom"])
        runner.run(loader, n["steps"])
    for name in list(stubs):  # the stand-ins leave sys.modules with the run
        if name.startswith("mmcv"):
            del sys.modules[name]
    sizes = np.bincount(model.memory_bank.label_bank.numpy(), minlength=n["num_clusters"])
    extra = {
        "encoder": model.encoder_q[0].net,
        "cluster_sizes": [int(sizes.min()), int(sizes.max())],
    }
    return model, runner.curve, extra
