"""The official implementations the `official_*` grids train, each pinned: its repository, commit,
the files the harness runs (by SHA-256, so another commit is refused) and how to get it; and the
shim table, every replacement of official code that cannot run on a 2-core CPU, with the official
file:line it stands in for. Importable without torch or jax (both sides read it).

A checkout lives outside this repository (`../official/<name>` beside the checkout by default,
`--official-root` / `$SSL_JAX_OFFICIAL` elsewhere); this project never copies official code.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_ROOT = os.path.join(os.path.dirname(ROOT), "official")


@dataclasses.dataclass(frozen=True)
class Checkout:
    name: str  # the folder under the official root
    repo: str
    commit: str
    files: tuple[tuple[str, str], ...]  # (path, sha256) of what the harness imports

    def get(self, root: str) -> str:
        """The commands that make the checkout."""
        return (
            f"git clone https://github.com/{self.repo} {os.path.join(root, self.name)} && "
            f"git -C {os.path.join(root, self.name)} checkout {self.commit}"
        )


CHECKOUTS = {
    "moco": Checkout(
        name="moco",
        repo="facebookresearch/moco",
        commit="78b69cafae80bc74cd1a89ac3fb365dc20d157d3",  # 2020-08-20, the last code commit
        files=(
            ("moco/builder.py", "349f418a8502e3a4fe5428535b375e5517f4df8591614d17168f91b4900ff1b2"),
            ("moco/loader.py", "801e0a5620b55e17a5194903fb77193a9e5f1eb8be36975c54f80a85898b5ba3"),
            ("main_moco.py", "f231ad27305f588784546f0741da714e6430d58cf03a4acc17c7cb561edc9a39"),
        ),
    ),
    "jcl": Checkout(
        name="jcl",
        repo="caiqi/Joint-Contrastive-Learning",
        commit="1cefabb8d685ecdadfa764289b7beab9d5b98410",  # 2020-10-09, "update": the last commit
        files=(
            (
                "moco/__init__.py",
                "9df29d40ed02c9ed8c0b64e9f1f0269e79784297b065bedfd712c588f90392eb",
            ),
            ("moco/utils.py", "01510f2135374d59e20ae276577c35b3bdd1f793bfd5e0f269c4da7381b08df7"),
            ("moco/loader.py", "870150e1012774b970986ab74bbf23492cd287da0ab751889ec3d014f11ec026"),
            (
                "moco/moco_unlimit_key_default.py",
                "a0b6541e63db1c3b29c23f3d073245752f8ff7208eefec6639e205e0b6aebb21",
            ),
            ("main_moco.py", "a7b1438ac6e63266c05bb91a695f19a88610665dba2d3c52b710443ce405f0f0"),
        ),
    ),
    "ring": Checkout(
        name="ring",
        repo="mhw32/contrastive-ring-public",
        commit="fb3e1c266e842d63c1a4f9c0107a4b5d510f39c9",  # 2021-09-15, "testing code": the last
        files=(
            (
                "src/systems/systems.py",
                "62ad58cc28a3afcfd0b3961de79bc9135d6fa10e145a1d16b606fd0dcbaa9f1e",
            ),
            (
                "src/objectives/instdisc.py",
                "88d3f5e01ab4600221935a17a520225a6fc7469459138f75f767422a75b99071",
            ),
            (
                "src/objectives/memory.py",
                "3c99678a8a6bb60c24fc6b2570d7ce51f993d8b9d8c3bb44563f3b81e1f5fcc0",
            ),
            (
                "src/objectives/moco.py",
                "5db8374a04f0996c576cf8bd90fd2599fc48ff86d02d2bc79a9ed6c88bf841a3",
            ),
            (
                "src/utils/policy.py",
                "a94b8cc9ef76e35ab36f32e6f13ef3898d1ca4967df773e609621bae15c7c220",
            ),
            (
                "src/utils/callbacks.py",
                "321a83dbbd84639f554b1a6d995a1c6128570d4f67efca7996b8c8ef4f05583d",
            ),
            (
                "src/utils/utils.py",
                "3d06e94c6406ff1a0a8d47b9c8150fc3bc209b6442309c9f90db08506f555228",
            ),
            (
                "src/datasets/datasets.py",
                "ed399f392108f31d271d45e613b502bd8408bd28db8905cbfbb9bd1668449ea7",
            ),
            (
                "src/datasets/cifar10.py",
                "9a3b60b9818b27f5e035e3e02a21a4d5f094e260fbe58cca4087feb9d812b37e",
            ),
            (
                "src/models/resnet2.py",
                "3d9dc084aba1338320a3cecbadb356a45af623b23b1735a4050ffac4c547bc3e",
            ),
            ("scripts/run.py", "e7c3ee9d4c8c737c5011c15dfdc1979a767b1cd93e0fc60f6f5a2b86b5150fe8"),
        ),
    ),
}

# Every replacement of official code, one row each: (official file:line, what it does there, what
# runs instead here). Everything else the official training step calls (the loss, the queue update,
# the EMA, the optimiser step, their order) is the official function itself.
SHIMS = {
    "moco": (
        (
            "moco/builder.py:82, :155; main_moco.py:193",
            "`.cuda()` on the shuffle permutation, the labels and the criterion",
            "`torch.Tensor.cuda` / `nn.Module.cuda` return the object itself (CPU tensors)",
        ),
        (
            "moco/builder.py:164-175 (`concat_all_gather`, called at :55, :76, :104)",
            "all_gather of the keys and key images over the DDP processes",
            "the process's own tensor (one process: world size 1)",
        ),
        (
            "moco/builder.py:85, :91, :110",
            "`torch.distributed.broadcast` of the shuffle, `get_rank()`",
            "no-op broadcast, rank 0: `_batch_shuffle_ddp` permutes the whole batch and "
            "`_batch_unshuffle_ddp` restores it, so the key encoder's BN sees all 64 keys "
            "(shuffle-BN over 8 GPUs has no one-process form; ours: 2 shuffled groups of 32)",
        ),
        (
            "main_moco.py:150-190",
            "DDP set-up; a run without DDP raises NotImplementedError",
            "the MoCo module used directly in one process (no DDP wrapper; gradients are the "
            "same on one process)",
        ),
        (
            "main_moco.py:160 (`models.__dict__[args.arch]`)",
            "torchvision's resnet50 as `base_encoder(num_classes=dim)`",
            "torchvision's `resnet18` with our config's stem and input channels and its stages "
            "rebuilt by torchvision's `_make_layer` at our width (the export's layout), "
            "torchvision's init; `fc` as the official code expects (the `--mlp` hack replaces it)",
        ),
        (
            "main_moco.py:220-249",
            "ImageNet JPEGs from an ImageFolder through the MoCo v2 augmentation at 224 px",
            "our Fashion-MNIST subset as PIL images through the same torchvision transform classes "
            "with our config's recipe numbers (`ops_to_transforms`) and its mean / std; "
            "`moco.loader.TwoCropsTransform` as is",
        ),
        (
            "main_moco.py:384-398 (`accuracy`, called by `train` at :307)",
            "top-1/5 of the (1 + K)-way logits, printed: `.view(-1)` on a slice of a transposed "
            "tensor, which torch 2.x refuses",
            "the same computation with `.reshape(-1)` (the value is only printed)",
        ),
        (
            "main_moco.py:256-258",
            "DataLoader with `--workers` processes, pin_memory, DistributedSampler",
            "DataLoader in the process (`num_workers=0`), shuffled with a seeded generator, "
            "drop_last; the last epoch cut at the grid's step count",
        ),
    ),
    "jcl": (
        (
            "moco/moco_unlimit_key_default.py:81, :170; main_moco.py:222, :338",
            "`.cuda()` on the shuffle permutation, the labels, the criterion and the views",
            "`torch.Tensor.cuda` / `nn.Module.cuda` return the object itself (CPU tensors)",
        ),
        (
            "moco/utils.py:55-66 (`concat_all_gather`, imported at moco_unlimit_key_default.py:3, "
            "called at :55, :76, :103)",
            "all_gather of the mean keys and key images over the DDP processes",
            "the process's own tensor (one process: world size 1)",
        ),
        (
            "moco/moco_unlimit_key_default.py:84, :90, :110",
            "`torch.distributed.broadcast` of the shuffle, `get_rank()`",
            "no-op broadcast, rank 0: `_batch_shuffle_ddp` permutes all M'·64 = 256 key crops and "
            "`_batch_unshuffle_ddp` restores them, so the key encoder's BN sees all 256 (official "
            "on 8 GPUs: 4 × 32 = 128 a GPU; ours: 2 shuffled groups of 128, `key_bn_group_size`)",
        ),
        (
            "main_moco.py:150-219",
            "DDP set-up; a run without DDP or `--gpu` raises NotImplementedError",
            "the JCL module used directly in one process (no DDP wrapper; gradients are the same "
            "on one process)",
        ),
        (
            "main_moco.py:337-340",
            "only with `args.gpu` set are the views moved to the GPU, the M' key crops "
            "concatenated crop-major and `im_q`, `im_k` bound",
            "`args.gpu = 0` with `.cuda` the identity (row 1): the same lines run on CPU tensors",
        ),
        (
            "main_moco.py:165-175",
            "`setup_logger(output=args.out_folder)`: the module's `logger` (stdout and "
            "`out_folder/log.txt`), used by `ProgressMeter.display`",
            "the official `setup_logger` with `output=None`, `color=False` (stdout only, no file)",
        ),
        (
            "main_moco.py:179-181 (`models.__dict__[args.arch]`)",
            "torchvision's resnet50 as `base_encoder(num_classes=dim)`",
            "torchvision's `resnet18` with our config's stem and input channels and its stages "
            "rebuilt by torchvision's `_make_layer` at our width (the export's layout), "
            "torchvision's init; `fc` as the official code expects (the `--mlp` hack replaces it)",
        ),
        (
            "main_moco.py:248-278",
            "ImageNet JPEGs from an ImageFolder through the MoCo v2 augmentation at 224 px",
            "our Fashion-MNIST subset as PIL images through the same torchvision transform classes "
            "with our config's recipe numbers (`ops_to_transforms`) and its mean / std; "
            "`moco.loader.MultiCropsTransform` as is, `k_crops` = our M' + 1",
        ),
        (
            "main_moco.py:280-287",
            "DataLoader with `--workers` processes, pin_memory, DistributedSampler",
            "DataLoader in the process (`num_workers=0`), shuffled with a seeded generator, "
            "drop_last; the last epoch cut at the grid's step count",
        ),
        (
            "main_moco.py:289-306",
            "per epoch: the sampler's epoch, `adjust_learning_rate`, `train`, a checkpoint file",
            "the same loop, `adjust_learning_rate` and `train` in that order, without the sampler "
            "and the checkpoint file; `args.epochs` = the epochs the step count spans (the λ ramp "
            "`jcl_lambda·(epoch + 1)/epochs` of `train`, :342, as is)",
        ),
        (
            "main_moco.py:437-451 (`accuracy`, called by `train` at :353)",
            "top-1/5 of the (1 + K)-way logits, printed: `.view(-1)` on a slice of a transposed "
            "tensor, which torch 2.x refuses",
            "the same computation with `.reshape(-1)` (the value is only printed)",
        ),
    ),
    "ring": (
        (
            "src/systems/systems.py:28, :44, :226; src/utils/callbacks.py:2",
            "PyTorch Lightning 1.1.8: `LightningModule` (its `global_step`, `use_ddp`, `log_dict`), "
            "`Callback`, and `Trainer.fit` (scripts/run.py:47-63) that steps the system",
            "a stand-in module: `LightningModule` an `nn.Module` with `global_step` (counted after "
            "each optimiser step), `use_ddp = use_ddp2 = False` (one process: the `shuffle_bn` "
            "branch of :293-307 permutes the 64 keys, BN sees all 64) and `log_dict` keeping the "
            "loss every 20 steps; `fit`'s one-process order written out: per epoch "
            "`MoCoLRScheduler.on_epoch_start`, then per batch `training_step`, `backward`, "
            "`optimizer.step`, `zero_grad`; the last epoch cut at the grid's step count",
        ),
        (
            "scripts/run.py:34-43",
            "`MoCoLRScheduler(initial_lr, max_epochs, schedule=(0.68·E, 0.83·E))`: ×0.1 steps "
            "(its `use_cosine_scheduler` left False)",
            "the same callback with `use_cosine_scheduler=True` (its cosine, once per epoch): our "
            "config's cosine schedule, as MoCo v2's `--cos`",
        ),
        (
            "src/systems/systems.py:229-249, :254-255 (Lightning's validation loop)",
            "sanity check, then after each epoch the test set through `get_losses_for_batch("
            "train=False)` and the bank's nearest neighbour: under `PretrainMoCoSystem` that also "
            "runs `_momentum_update_key_encoder` (:291) once per test batch",
            "not run (`validate` off): no validation batches, so the key encoder gets only the "
            "training steps' EMA updates (the official run with validation would take ~157 extra "
            "EMA steps an epoch at batch 64 on 10,000 test images)",
        ),
        (
            "src/datasets/datasets.py:1",
            "`import cv2` (unused in the file)",
            "an empty `cv2` module while the checkout is imported",
        ),
        (
            "src/systems/systems.py:50-57 (`datasets.get_datasets`, src/datasets/datasets.py:20-55)",
            "CIFAR-10 / STL-10 from torchvision through the code's transforms at 224 px (or 32-96 "
            "px MoCo v2 ones), in `CIFAR10` (index, view, label) or `CIFAR10TwoViews` (index, "
            "view, view, label)",
            "the official `DATASET['cifar10']` / `['cifar10_2views']` class (its `__getitem__` "
            "as is) around our Fashion-MNIST subset as PIL images through the same torchvision "
            "transform classes with our config's recipe numbers (`ops_to_transforms`) and its "
            "mean / std; no validation set",
        ),
        (
            "src/systems/systems.py:32-41",
            "DataLoader with `data_loader_workers` processes, pin_memory",
            "the same `create_dataloader` with `data_loader_workers=0` (shuffled by the global "
            "torch RNG that `seed_everything`, scripts/run.py:30, :66-71, seeds with our seed)",
        ),
        (
            "src/models/resnet2.py:11-12 (`models.resnet18(pretrained=False)`, `models.resnet50`)",
            "torchvision's resnet18 (and a resnet50, built and unused) inside `CustomResNet`",
            "torchvision's `resnet18` with our config's stem and input channels and its stages "
            "rebuilt by torchvision's `_make_layer` at our width (the export's layout), "
            "torchvision's init; no resnet50; `CustomResNet` as is (its `features`, MLP l1-ReLU-l2)",
        ),
        (
            "src/objectives/memory.py:15-24 (`MemoryBank._create`; cells `ir`, `iring` only)",
            "bank rows uniform in ±1/√(D/3), L2-normalised",
            "our config's `bank_init='normal'`: normalize(randn) (the `iring+official` cell keeps "
            "the code's uniform rows)",
        ),
    ),
}


def shim_hash(name: str) -> str:
    """Short hash of a method's shim table: a cell records which shims it ran under."""
    text = json.dumps(SHIMS[name], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check(name: str, root: str = "") -> str:
    """The path of checkout `name` under `root`, or SystemExit with one line saying what is wrong
    and how to get it (missing, or its files are not the pinned commit's)."""
    root = root or os.environ.get("SSL_JAX_OFFICIAL", "") or DEFAULT_ROOT
    checkout = CHECKOUTS[name]
    path = os.path.join(root, checkout.name)
    if not os.path.isdir(path):
        raise SystemExit(
            f"error: no checkout of {checkout.repo} at {path}; get it with: {checkout.get(root)}"
        )
    for file, digest in checkout.files:
        full = os.path.join(path, file)
        if not os.path.isfile(full):
            raise SystemExit(
                f"error: {path} has no {file}: not {checkout.repo} at {checkout.commit[:8]}; "
                f"get it with: {checkout.get(root)}"
            )
        if sha256(full) != digest:
            raise SystemExit(
                f"error: {full} differs from {checkout.repo} at {checkout.commit[:8]} (another "
                f"commit, or edited); get the pinned one with: {checkout.get(root)}"
            )
    return path
