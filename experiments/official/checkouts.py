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
