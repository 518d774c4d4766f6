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
    "sce": Checkout(
        name="sce",
        repo="CEA-LIST/SCE",
        commit="07cbe636511666e0455d6270ae6d9aad5fc5937d",  # 2023-09-06, the last commit
        files=(
            (
                "sce/models/siamese/sce.py",
                "7385c6a8c76e2e4c5f091b4522032321d5359efa7224b57a97def3308d03d58d",
            ),
            (
                "sce/models/siamese/base.py",
                "76f3d2bcd3cb55681c3b4723ed6b4095ee1086a79783679c3b8c4e02b0706cd3",
            ),
            (
                "sce/models/siamese/momentum_base.py",
                "e09e2008be23864bde7e560d506d20eb6584b8ab7b2d103fb6f99661d202b459",
            ),
            (
                "sce/models/siamese/shuffle_momentum_base.py",
                "4558f324bda14d9d5d4565156e8189c222f54bc0f746351ed417f143ca84a8df",
            ),
            (
                "sce/models/siamese/shuffle_momentum_queue_base.py",
                "68b78afe5c8180ae99c0ccd9feb3fecf92cd879540572da2908cf3abeb18fbdc",
            ),
            (
                "sce/models/modules/split_batch_norm.py",
                "1a344acbd820432c90e2b991660328ca687dc1551338c493cff7309f712a3df1",
            ),
            (
                "sce/models/heads/mlp.py",
                "539bed42ce1f2a103326e096ebbf87bd1a2605d72a8472dea217df1e792b8c21",
            ),
            (
                "sce/optimizers/optimizer_factory.py",
                "e2870c49c76998f7ac68386e2214b6aaa470dfba3399b1be9d48912d4f143160",
            ),
            (
                "sce/schedulers/scheduler_factory.py",
                "84e9382aa03729021f265ed0fa0819f72608c8482c8e98d978d4ef5cc4e93d3c",
            ),
            (
                "sce/schedulers/linear_warmup_cosine_annealing_lr.py",
                "242b430e07d366c405292305fc9ed02cdc01ca921f3589115aa6db8f974f9a6b",
            ),
            (
                "sce/datasets/dict_dataset.py",
                "b3fd137f9cf5cbbb5effe4c40e1869d53b04184298c20378b6240a6c6d72d912",
            ),
            (
                "sce/transforms/multi_crop_transform.py",
                "f6ee6105be284a6e868b6350b5a605e1ae8d5d6df5b134cccec9bcfe122acbb5",
            ),
        ),
    ),
    "ressl": Checkout(
        name="ressl",
        repo="KyleZheng1997/ReSSL",
        commit="4d67daaa3fd65e81adeb02017a1cfd4d2e2168cb",  # 2021-12-01, the last commit
        files=(
            ("ressl.py", "c32be29cf54f3e0a020a08f97ca1f8be10b5d42e2326a696f9365a1badb4e08b"),
            (
                "network/ressl.py",
                "4538a1e0c8e3768aa57b049186cb3971fc19391d404249b164c5fccc9a16ec84",
            ),
            (
                "network/backbone.py",
                "2c89debb1d0faa3da6a06a720120ff010bb6913460f039610dc9252a2a756aef",
            ),
            (
                "network/head.py",
                "40e3a0c279ff854c19460512473894505627cf050bbb05efc8ed7ab5a56b3aae",
            ),
            ("util/meter.py", "ff4b07ec665a193df3ce2bd6bf06cc9ed17df951fc06e1f4d0fac8aceab4308f"),
        ),
    ),
    "mmselfsup": Checkout(
        name="mmselfsup",
        repo="open-mmlab/mmselfsup",
        commit="920deff14a69c55a624c6ff095b4e3fa07fd5ad3",  # branch 0.x: "[Feature] add InterCLR (#609)"
        files=(
            (
                "mmselfsup/models/algorithms/interclr_moco.py",
                "79c0d0865c9954416361db90a00a86fe459a4ce8d9c8985cde203bd53e294309",
            ),
            (
                "mmselfsup/models/algorithms/base.py",
                "ab93f894d78faf2c5096dc5fcd4a6a76d1dd87520379b58688b5a94d5f0cd411",
            ),
            (
                "mmselfsup/models/builder.py",
                "9c704cc71e52860e932c56d1f71f7775e6e6a1c2b57bff0684069a936821e565",
            ),
            (
                "mmselfsup/models/memories/interclr_memory.py",
                "af86c4bd41d73764eacdcd501a0884d5c9f62f9aba2f0bd2dfa43f86a7c2b2cc",
            ),
            (
                "mmselfsup/models/heads/contrastive_head.py",
                "717ed24bd8ca22d438460492cc11682a2b8bf14934980b0fa4a12c6431f78700",
            ),
            (
                "mmselfsup/models/necks/mocov2_neck.py",
                "3d290396798386c817e9bdde78636d1768b1df506d20a00909d5852f61f78db9",
            ),
            (
                "mmselfsup/core/hooks/interclr_hook.py",
                "31bbaa580760c556e66c4fa7e4c418c0821635d97582d74ebf3af14bf0a139b4",
            ),
            (
                "mmselfsup/core/hooks/optimizer_hook.py",
                "3a871388c3a1fe233513a981191a6dca6f5fa69bf000d2773d9fbfc8584d2baa",
            ),
            (
                "mmselfsup/utils/clustering.py",
                "c710e84a73e41b28c29c01ac3f89d60cf1cd62892f03f45757f7b0def824a1b8",
            ),
            (
                "mmselfsup/utils/extractor.py",
                "5c5af4780c9fc4e9bb328aa27936587e4f3a51147d2787085dbe3bea0ea87877",
            ),
            (
                "mmselfsup/utils/alias_multinomial.py",
                "aff587cf2bdf55d6aa44b7cc06d9d16b42a020fe07c4a1b31dbc34f72835db3a",
            ),
            (
                "mmselfsup/utils/batch_shuffle.py",
                "240b43a4565cda32d8632ba53cb6417c65e3a9c63d8a25350d0add4ccdf5541b",
            ),
            (
                "mmselfsup/utils/gather.py",
                "22ba6c9f230903c760e5cfdf2a1975154040a3d80118c4852a46d654b3e87635",
            ),
            (
                "mmselfsup/utils/collect.py",
                "99d72a0f7b2e8951598a1e4a1e6b6df9ed1631a69719e958570c8946102b44de",
            ),
        ),
    ),
    "cmc": Checkout(
        name="cmc",
        repo="HobbitLong/CMC",
        commit="7b227be0b10ef4e526c72af07664f5079ed9ee09",  # 2020-11-10, the last commit
        files=(
            ("train_CMC.py", "d4de6d30e36b8f38b4ec7a87639e4797c54e272e91f65fd697881832474cabd2"),
            ("dataset.py", "9cbcc8a9e603d7111dbd1f792424c1f9b58c24c4e419a4d0a0acbf16d51d2a63"),
            ("util.py", "b8ed1e22d017b3c3c4c645e1fbe8a583f60e70f15d7ca850ace91f9a72245c50"),
            (
                "models/resnet.py",
                "8b1a5cf8c1f54875b9fcddeaf56520ad063fef4ad7e57005c63eb919804650a6",
            ),
            (
                "models/alexnet.py",
                "cd847a6241bf8230ba5b723a1809b32af84533c55567909b909280e1fdb46a00",
            ),
            (
                "NCE/NCEAverage.py",
                "dae51cd5e929b0e4983e6d43ff71abe24d5a5fc23ee09e328f5e5a91332aa034",
            ),
            (
                "NCE/NCECriterion.py",
                "91fc0a6b2f05909477ae03302dc077db8887c94dab3482ffbdce0876ef9ef426",
            ),
            (
                "NCE/alias_multinomial.py",
                "f3b7d0380338afad5e4c3d2b10ed7b353091d3c5ae279d157431cde7235e39ba",
            ),
        ),
    ),
    "pycontrast": Checkout(
        name="pycontrast",
        repo="HobbitLong/PyContrast",
        commit="84f94eabec4f031194c543579476ae52ea647b90",  # 2023-09-04, the last commit (a merge)
        files=(
            (
                "pycontrast/main_contrast.py",
                "44d6f7aea820f4f6a761ca997ee44a584b4307f19077fc6c4d908470d035ad79",
            ),
            (
                "pycontrast/options/base_options.py",
                "1c4768aa798d6e1d0e8fc3ee41fc3b5bcd664096a50bfa3e63ff537f28f15ea8",
            ),
            (
                "pycontrast/options/train_options.py",
                "561c00f8ac1dffed2fcd66d1171fa717d3c86f6c05a7e55150fd4391449e2910",
            ),
            (
                "pycontrast/learning/contrast_trainer.py",
                "f8422c541c8e81fac9448a73738b5c7367da2accb6b07ccf52578d07e762c041",
            ),
            (
                "pycontrast/learning/base_trainer.py",
                "72fccaf75efc150cd926dfd99f2e9b7c5d4991efb02f1f45edd0d6471e47737c",
            ),
            (
                "pycontrast/learning/util.py",
                "493abec13fe1ac02789c5b9581d5b8a8cc1240e31ea990c6552f2a247e7ada37",
            ),
            (
                "pycontrast/networks/build_backbone.py",
                "e83d231ae80c6ee354a1bad7e2f23fdd1242641779cd5e236c8540e2a73c9687",
            ),
            (
                "pycontrast/networks/util.py",
                "3187fc3a51cbca55c34247200754d6d41a00bfa0f0cc8d3c90c1ad7d1b845f9e",
            ),
            (
                "pycontrast/networks/resnet.py",
                "edace692c87693023edc1a55117b37aab66cc6fe98de6504fa4d528179ac516a",
            ),
            (
                "pycontrast/networks/resnest.py",
                "9e0287fec3fdf53947f7d81097e6010614852169fe0232ad34dfda0a7a6f8fc8",
            ),
            (
                "pycontrast/memory/build_memory.py",
                "365afa4d1620528b2c46c5e476bb373d1625549978614848dc589dc9361f8e43",
            ),
            (
                "pycontrast/memory/mem_moco.py",
                "049096e8d1ce0e88fa6a999e45108f79af21f8d998ff7d251d17b481eb919444",
            ),
            (
                "pycontrast/memory/mem_bank.py",
                "c9c168a16f3f0f299f9700c7160143385659a7b831b05fa9b94789985f7021da",
            ),
            (
                "pycontrast/memory/alias_multinomial.py",
                "f3b7d0380338afad5e4c3d2b10ed7b353091d3c5ae279d157431cde7235e39ba",
            ),
            (
                "pycontrast/datasets/util.py",
                "733277ec8ee464eb54370743b7f264e1eb8e22479b886551802efe1e47f032ac",
            ),
            (
                "pycontrast/datasets/dataset.py",
                "51d93cbf7c0edbef31348004374384f19007155507e90008dd65243ba8d9de21",
            ),
            (
                "pycontrast/datasets/RandAugment.py",
                "cd8b7e42e7b20852dd6d8853b285aef0118be1afe306b8cadc5459fd6092401e",
            ),
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
        (
            "src/datasets/cifar10.py:39-42 (`CIFAR10TwoViews` reads an image twice; cell "
            "`mocoring+ourviews` only, a diagnostic)",
            "each read of an image draws a view through torchvision's RandomResizedCrop, flip and "
            "ColorJitter on a PIL image",
            "each read of an image returns the next of the views our host pipeline made "
            "beforehand (`augment.apply_ops_uint8`, the same recipe), then ToTensor and Normalize",
        ),
    ),
    "sce": (
        (
            "sce/utils/strategies.py:27 (imported by shuffle_momentum_base.py:16)",
            "imports Lightning 1.6's strategy classes (DDP2Strategy, HorovodStrategy, ...), which "
            "Lightning 2 no longer has; `get_num_devices_in_trainer` is called by `on_train_start`",
            "a stand-in module whose `get_num_devices_in_trainer` answers 1, as the official one "
            "does for `SingleDeviceStrategy` (`num_devices=1`, the CIFAR-10 run's one GPU)",
        ),
        (
            "run/pretrain.py:52-76 (`Trainer` of configs/trainer/gpu_ddp_amp.yaml, `trainer.fit`)",
            "Lightning's loop on one GPU with DDP and fp16 AMP; callbacks (an online linear "
            "classifier on detached features, checkpoints, lr monitor, progress bar)",
            "the loop Lightning's automatic optimisation runs for a batch, written out "
            "(`train_sce.lightning_steps`): `training_step`, zero_grad, backward, `optimizer.step`, "
            "`on_train_batch_end`, the step-interval scheduler; float32, no callbacks, stopped at "
            "the grid's step count",
        ),
        (
            "base.py:81-101 (`training_steps_per_epoch`, `configure_optimizers`)",
            "the steps an epoch from the trainer's datamodule (images // global batch), then "
            "`hydra.utils.instantiate(optimizer_cfg, num_steps_per_epoch=..., model=self)`",
            "the same instantiate call with our subset's steps an epoch (10,000 // 64 = 156); the "
            "official `optimizer_factory` and `scheduler_factory` (`linear_warmup_cosine_annealing_lr`"
            ", 0 warm-up epochs, `max_epochs` the epochs the step count spans) as the config "
            "gives them",
        ),
        (
            "shuffle_momentum_queue_base.py:148, momentum_base.py:139 (`self.log`)",
            "the loss and the momentum to the Lightning logger",
            "Lightning's `log` without a trainer returns; the loss every 20 steps is kept by the "
            "loop (measurement only)",
        ),
        (
            "sce/models/trunks/resnet.py:22-61 (`create_resnet`, from configs/model/trunk/resnet/"
            "resnet18/small_input_no_fc.yaml)",
            "torchvision's resnet18 with a 3×3 stride-1 stem, no max-pool, `fc` the identity",
            "`train_sce.trunk` as the `_target_`: torchvision's `resnet18` with our config's stem, "
            "input channels and width (the export's layout), `fc` the identity; instantiated "
            "twice by the official code (online and momentum trunks, momentum_base.py:53)",
        ),
        (
            "sce/models/heads/mlp.py:13-120 (`MLPHead`, from configs/model/head/mlp/"
            "projector_resnet18_mlp2_bn1.yaml)",
            "`MLPHead` 512 → 512 (BN, ReLU, no bias) → 128 (bias)",
            "the official `MLPHead` with the same flags at our widths (256 → 256 → 128)",
        ),
        (
            "sce/transforms/__init__.py:14; sce/datamodule/cifar.py:58-96; configs/transform/"
            "multi_crop_transform/two_crops_soft_and_strong_pil_contrastive_cifar10.yaml",
            "CIFAR-10 as `DictDataset` items through `MultiCropTransform` [soft, strong] built of "
            "`sce.transforms` wrappers; the package's `__init__` imports "
            "`logistic_regression_transform`, absent at this commit, so `sce.transforms` cannot "
            "be imported at all",
            "our Fashion-MNIST subset as PIL images in the official `DictDataset`, through the "
            "official `MultiCropTransform` (its file loaded on its own) of our weak and strong "
            "recipes as the torchvision classes the `sce.transforms` wrappers subclass "
            "(`ops_to_transforms`), our mean / std",
        ),
        (
            "sce/datamodule/base.py:190-196 (`train_dataloader`, configs/datamodule/cifar10.yaml);"
            " run/pretrain.py:39-40 (`seed_everything`)",
            "DataLoader with 4 workers, pin_memory, drop_last; seed 42",
            "DataLoader in the process (`num_workers=0`), shuffled with a seeded generator, "
            "drop_last; `random.seed` and `torch.manual_seed` with the cell's seed",
        ),
    ),
    "ressl": (
        (
            "ressl.py:14-21",
            "parses `sys.argv` at import (`--epochs`, `--lr`, `--t`, `--backbone`)",
            "imported with `sys.argv` set to the command line of our numbers",
        ),
        (
            "data/imagenet.py:5 (`import mc`, star-imported by ressl.py:3)",
            "the memcached client the ImageNet data set reads through",
            "an empty module (the ImageNet data set is not used)",
        ),
        (
            "ressl.py:24 (`warm_up = 5`)",
            "5 warm-up epochs of the per-iteration lr (`adjust_learning_rate`, :27-39)",
            "0: our config's (no warm-up); `adjust_learning_rate` then gives the cosine over "
            "`epochs` × 156 iterations",
        ),
        (
            "network/ressl.py:75, ressl.py:63",
            "`.cuda()` on the shuffle permutation; the views moved to the GPU",
            "`.cuda()` returns the tensor; `train` called with `local_rank=None` (its own "
            "no-GPU path: the views stay where they are)",
        ),
        (
            "network/ressl.py:138-149 (`concat_all_gather`, called at :48, :69, :97)",
            "all_gather of the keys and key images over the DDP processes",
            "the process's own tensor (one process: world size 1)",
        ),
        (
            "network/ressl.py:78, :84, :103",
            "`torch.distributed.broadcast` of the shuffle, `get_rank()`",
            "no-op broadcast, rank 0: the key encoder's BN sees all 64 keys, shuffled (official "
            "on 8 GPUs: 32 a GPU; ours: 8 shuffled groups of 8, `key_bn_group_size`)",
        ),
        (
            "ressl.py:87-136 (`main`)",
            "DDP set-up, the model in DDP, the optimiser's two groups (names with 'bn' or "
            "'bias' without weight decay), ImageNet loader, checkpoint resume",
            "the model used directly in one process; the same two groups (`param_groups`) with "
            "our lr, momentum and weight decay",
        ),
        (
            "network/backbone.py:6-16, :23 (`backbone_dict`, `dim_dict`); network/ressl.py:24-25",
            "the repository's copy of torchvision's resnet50 without `fc`; `BackBone(backbone, "
            "dim)` with the default hidden width 4096",
            "`backbone_dict['resnet18']` our torchvision `resnet18` (stem, channels, width of our "
            "config; `fc` the identity), `dim_dict` its 256 features; `BackBone` with our hidden "
            "width (256); the official `ProjectionHead` and L2 normalisation as they are",
        ),
        (
            "ressl.py:113-117; data/augmentation.py:27-44",
            "ImageNet through `moco_aug` (img1, the online view) and `target_aug` (img2, the "
            "target's), DistributedSampler, 8 workers",
            "our Fashion-MNIST subset as PIL images, our strong recipe as img1 and our weak one "
            "as img2 (the same torchvision classes, our numbers, our mean / std); DataLoader in "
            "the process, shuffled with a seeded generator, drop_last; the last epoch cut at the "
            "grid's step count with its full length (`train` reads it for the lr)",
        ),
        (
            "ressl.py:72 (`losses.update`)",
            "the loss into `util.meter.AverageMeter`",
            "the same meter class, also keeping every 20th step's loss (measurement only)",
        ),
    ),
    "mmselfsup": (
        (
            "tools/train.py:129-140 (`init_dist(args.launcher, **cfg.dist_params)`; :131-135 refuse "
            "InterCLRMoCo without it, interclr_hook.py:51 asserts `dist_mode`)",
            "an NCCL process group over 8 GPUs",
            "a gloo process group of one process (world size 1): the official torch.distributed "
            "calls (the bank's and centroids' broadcasts, the all-gathers of keys, indices and "
            "extracted features, the loss all-reduce, the barrier) run as they are",
        ),
        (
            "interclr_moco.py:249, :272, :296, :327, :421; interclr_memory.py:31, :35, :43, :74, "
            ":99-102, :165, :174, :190, :227-244; interclr_hook.py:162; batch_shuffle.py:21; "
            "gather.py:13-29; alias_multinomial.py:51-53",
            "`.cuda()`, `device='cuda'` and `torch.cuda.LongTensor`: the bank, centroids, "
            "queue, indices and sampling weights on the GPU",
            "CPU tensors: `Tensor.cuda` / `Module.cuda` return the object; in the two InterCLR "
            "files `torch.zeros` / `torch.ones` drop `device='cuda'` and `torch.cuda.LongTensor` "
            "is `torch.LongTensor` (`train_interclr.CpuTorch`)",
        ),
        (
            "utils/clustering.py:100-104, :109 (`run_kmeans`)",
            "faiss-gpu's `StandardGpuResources` / `GpuIndexFlatL2` as the k-means index; "
            "`vector_to_array(clus.obj)`, faiss 1.6's objective per iteration (printed)",
            "faiss-cpu 1.15's `IndexFlatL2` (the same exact L2 search), `obj` read from its "
            "`iteration_stats`; the official `faiss.Clustering` (seed `np.random.randint(1234)`, "
            "20 iterations, 1e7 points a centroid, no PCA) as is, which in faiss 1.15 stops early "
            "once the objective no longer changes",
        ),
        (
            "mmselfsup/__init__.py:4-5; models/__init__.py:2-9; utils/__init__.py:2-13",
            "package imports: mmcls and mmcv's version check, every algorithm and backbone "
            "(mmcls, timm), every utility (mmcv's env, logger, test helpers)",
            "not run: packages holding only the files loaded (`train_interclr.package_stubs`); "
            "`mmselfsup.utils` gives each name the InterCLR files import from its own official "
            "module (`UTILS`)",
        ),
        (
            "models/builder.py:2-5; interclr_memory.py:6; base.py:7; contrastive_head.py:4; "
            "mocov2_neck.py:3; interclr_hook.py:5-6; optimizer_hook.py:2-4; collect.py:2",
            "mmcv 1.x (`mmcv-full>=1.4.2`, requirements/mminstall.txt): `Registry` / "
            "`build_from_cfg`, `BaseModule`, `Hook` / `HOOKS`, `get_dist_info`, `auto_fp16`, "
            "`print_log`, `ProgressBar`",
            "stand-ins (`train_interclr.mmcv_stubs`; PyPI has only mmcv-full's source, whose "
            "setup.py needs `pkg_resources` and a C++ build of its ops): a registry building "
            "`cls(**cfg)`, `BaseModule.init_weights` calling its children's (mmcv's without an "
            "init_cfg), mmcv's `every_n_iters` / `every_n_epochs` / `is_last_iter`, rank and "
            "world size of the gloo group, fp16 off, `print`, a silent progress bar",
        ),
        (
            "apis/train.py:119-170 (`MMDistributedDataParallel`, `build_runner`, "
            "`register_training_hooks`); mmcv/runner/epoch_based_runner.py:42-59 (`train`)",
            "mmcv's `EpochBasedRunner` over the model in DDP, hooks by priority: the lr, "
            "`DistOptimizerHook`, checkpoint, timer, logger, `DistSamplerSeedHook`, `InterCLRHook`",
            "`train_interclr.Runner`: mmcv's loop written out for one process (`before_run`; "
            "per epoch `model.train()`, `before_train_epoch`, per batch `train_step`, "
            "`after_train_iter`, iter + 1; `after_train_epoch`), the lr hook, the official "
            "`DistOptimizerHook` and `InterCLRHook` in mmcv's priority order; the model called "
            "directly (`OneProcess`: `.module`, `train_step`); no checkpoint, timer, logger or "
            "sampler hooks; the hook's files in a temporary folder; the last epoch cut at the "
            "grid's step count",
        ),
        (
            "configs/selfsup/_base_/schedules/sgd_coslr-200e_in1k.py:2, :6",
            "`build_optimizer` (SGD over all parameters) and mmcv's "
            "`CosineAnnealingLrUpdaterHook(min_lr=0)`, by epoch",
            "`torch.optim.SGD(model.parameters())` with our lr, momentum and weight decay; "
            "`train_interclr.CosineLr`: mmcv's `annealing_cos(lr, 0, epoch / max_epochs)` set "
            "before each epoch (ours: per step)",
        ),
        (
            "configs/selfsup/_base_/models/interclr-moco.py:7-12",
            "mmselfsup's ResNet-50 (`out_indices=[4]`: the last stage's map, in a 1-tuple)",
            "torchvision's `resnet18` with our config's stem, input channels and width (the "
            "export's layout), its pooled last stage as a 1×1 map in a 1-tuple (`MoCoV2Neck`'s "
            "average pool of it is the same vector); the official `MoCoV2Neck` at our widths",
        ),
        (
            "configs/selfsup/_base_/datasets/imagenet_interclr-moco.py:1-54 (MultiViewDataset, "
            "datasets/multi_view.py:61; `replace=True`, samplers/distributed_sampler.py:50)",
            "ImageNet through the MoCo v2 augmentation at 224 px, 8 × 32 a batch, indices drawn "
            "with replacement each epoch, 4 workers",
            "our Fashion-MNIST subset as PIL images through the same torchvision transform "
            "classes with our config's recipe numbers and mean / std, as `dict(img=[view, view], "
            "idx=i)`; DataLoader in the process, shuffled without replacement by a seeded "
            "generator, drop_last (as our side)",
        ),
        (
            "imagenet_interclr-moco.py:23-36, :60-72 (the hook's extractor); "
            "datasets/builder.py:48 (`build_dataloader`, called at extractor.py:41)",
            "SingleViewDataset of ImageNet through Resize 256, CenterCrop 224, 256 a GPU, "
            "8 workers, DistributedSampler",
            "our subset through ToTensor and Normalize (our eval transform) as `dict(img=...)`; "
            "`mmselfsup.datasets.build_dataloader` a DataLoader in order, batch 256, no workers",
        ),
    ),
    "cmc": (
        (
            "train_CMC.py:196 (`index.cuda(async=True)`)",
            "`async` is a keyword since Python 3.7: the file does not compile",
            "the file compiled with `non_blocking=True` in its place (`train_cmc.load_train_cmc`; "
            "the only edit, under `torch.cuda.is_available()`, which is False here)",
        ),
        (
            "train_CMC.py:13 (`import tensorboard_logger`); :17-18 (apex)",
            "the TensorBoard logger package and apex AMP",
            "an empty `tensorboard_logger` module (`main`, which uses it, is not run); apex "
            "absent, as the file allows (`try: ... except ImportError`)",
        ),
        (
            "train_CMC.py:219; NCE/NCEAverage.py:14; NCE/NCECriterion.py:58",
            "`torch.cuda.synchronize()` after each step; the alias sampler's and the softmax "
            "labels' `.cuda()`",
            "`torch.cuda.synchronize` a no-op; `Tensor.cuda` / `Module.cuda` return the object "
            "(CPU tensors; `set_model` and `train` skip their own `.cuda()` without a GPU)",
        ),
        (
            "models/resnet.py:185-193 (`resnet18(in_channel, width)`, called by `ResNetV1` at "
            ":258-259)",
            "the repository's ResNet-18: a 64-channel 7×7 stem at any width, `AvgPool2d(7)` "
            "(224 px only), `fc` → 128, L2 normalisation",
            "torchvision's `resnet18` with our config's stem, the input channel count `ResNetV1` "
            "asks for (1 for L, 2 for ab) and half our config's width per view (our CMC's two "
            "encoders), `fc` → `feat_dim`, then the official `Normalize(2)`; `ResNetV1.forward`'s "
            "split into L and ab as is (`--model resnet18v1`)",
        ),
        (
            "train_CMC.py:128-164 (`get_train_loader`: `ImageFolderInstance`, "
            "`RandomResizedCrop(224)`, 18 workers)",
            "ImageNet JPEGs from a folder, cropped to 224 px",
            "`get_train_loader` as is on our color_fashion_mnist subset as RGB PIL images "
            "returning `(image, target, index)` as `ImageFolderInstance` does; "
            "`RandomResizedCrop` at our config's size (32 px) with the official `crop_low`; "
            "no workers; its `RGB2Lab`, `Normalize` and unseeded shuffle (torch's seeded global "
            "generator) as they are",
        ),
        (
            "train_CMC.py:236-300 (`main`: argument parsing, folders, resume, TensorBoard, "
            "checkpoints)",
            "the epoch loop around `adjust_learning_rate(epoch)` and `train(epoch, ...)`",
            "the same loop (`train_cmc.train_cmc`: `adjust_learning_rate` then `train` for epochs "
            "1..E, the last cut at the grid's step count) with our numbers as the options; no "
            "checkpoint files, no TensorBoard",
        ),
    ),
    "pycontrast": (
        (
            "pycontrast/main_contrast.py:22-26 (`torch.cuda.device_count()`, `mp.spawn`)",
            "one `main_worker` process per GPU of the node",
            "`torch.cuda.device_count()` 1 as main_contrast.py and learning/base_trainer.py see "
            "`torch` (`train_infomin.OneGpuTorch`); `mp.spawn` calls `main_worker(0, 1, args)` in "
            "this process: one node of one GPU (`--world-size 1 --rank 0 "
            "--multiprocessing-distributed`)",
        ),
        (
            "pycontrast/learning/base_trainer.py:31-32, :40-59 (`init_ddp_environment`)",
            "`torch.cuda.set_device(gpu)`, cuDNN benchmark; an NCCL process group over "
            "`--dist-url` and a local group per node (ShuffleBN's)",
            "`set_device` a no-op; `--dist-backend gloo`, `--dist-url file://` in a temporary "
            "folder: the official group and local group of one process, so its all_gathers and "
            "broadcasts (`broadcast_memory`, `_shuffle_bn`, `_global_gather`) run as they are; "
            "the group destroyed, cuDNN's flag and `$PYTHONWARNINGS` restored after the run",
        ),
        (
            "pycontrast/learning/contrast_trainer.py:64 (`DDP(model, device_ids=[args.gpu])`)",
            "DDP of the online model on the process's GPU",
            "torch's DDP in its CPU form (no `device_ids`, which a CPU module refuses) in the "
            "gloo group of one: the gradient all-reduce of one process; `model.module` as the "
            "official code reads it (the EMA copy at :67, the EMA at :337)",
        ),
        (
            "pycontrast/main_contrast.py:46, :49; learning/contrast_trainer.py:50, :52, :177, "
            ":247, :262; memory/mem_moco.py:25, :78",
            "`.cuda()` on the memory, criterion, models, shuffle ids, views, queue indices and "
            "labels",
            "`torch.Tensor.cuda` / `nn.Module.cuda` return the object itself (CPU tensors)",
        ),
        (
            "pycontrast/learning/base_trainer.py:9, :64 (`tensorboard_logger`); "
            "learning/contrast_trainer.py:13-16 (apex)",
            "TensorBoard logging of each epoch's loss, accuracies and lr; apex AMP",
            "a stand-in `tensorboard_logger.Logger` keeping each epoch's values in memory (the lr "
            "of each epoch goes to run.json), no files; apex absent, as the file allows "
            "(`try: ... except ImportError`), `--amp` off",
        ),
        (
            "pycontrast/networks/build_backbone.py:12-16, :35-41 (`_parse_width`, "
            "`model_dict[name](width=width)`, networks/resnet.py:413-426); :23-29, :59",
            "the ImageNet ResNet-50 (`2048·width` pooled features, no `fc`); `dim_in = "
            "int(2048·width)` for the 'mlp' head and `JigsawHead`",
            "`model_dict['ours']` our torchvision `resnet18` (`common.torchvision_resnet`: our "
            "config's stem, 3 channels and width; `fc` the identity: the pooled features, as "
            "networks/resnet.py:220-221 returns them) for the online and the EMA model; "
            "`_parse_width` gives `feature_dim / 2048`, so `dim_in` is our feature dim (256): the "
            "official 'mlp' head 256 → 256 → 128 and `JigsawHead` (fc1 256 → 256 → 128, fc2 "
            "9·128 → 128) as they are",
        ),
        (
            "pycontrast/datasets/util.py:279-300, :325-334, :234-242",
            "aug 'D' at ImageNet sizes: RRC 224 (0.2–1), flip, jitter (0.8, 0.8, 0.8, 0.2) p 0.8, "
            "`GaussianBlur(22)` p 0.5, RandAugment `rand-n2-m10-mstd0.5` (`translate_const` "
            "int(224·0.45), the ImageNet-mean fill), grayscale 0.2; the jigsaw transform RRC 255 "
            "(0.6–1), flip, `JigsawCrop()` (3 × 3 cells of 85 px, 64-px patches); ImageNet "
            "mean / std",
            "the same classes in the same order (`train_infomin.view_transform`, "
            "`jigsaw_transform`; torchvision's as util.py imports them) with our recipe's numbers: "
            "RRC 32 (0.2–1), the same jitter, `GaussianBlur(22)` (23 taps), RandAugment "
            "`rand-n2-m10-mstd0.5` with `translate_const` int(32·0.45) (used by none of its 15 "
            "ops) and fill (124, 116, 104), grayscale 0.2; jigsaw RRC 36 (0.6–1), flip, "
            "`JigsawCrop(3, 36, 9)` (cells of 12 px, 9-px patches); our config's mean / std",
        ),
        (
            "pycontrast/datasets/util.py:339-373 (`build_contrast_loader`, called at "
            "main_contrast.py:41-42); main_contrast.py:68 (`train_sampler.set_epoch`)",
            "ImageNet folders through `ImageFolderInstance(two_crop=True, jigsaw_transform)`, "
            "`DistributedSampler`, 40 workers, pin_memory, the last partial batch kept; no seed "
            "(`--seed` is parsed, never used)",
            "the official `ImageFolderInstance` (its `__init__` and `__getitem__`: two crops, "
            "then the jigsaw patches) whose folder scan gives our subset's (index, label) pairs "
            "and whose loader the index's RGB PIL image; DataLoader in the process "
            "(`num_workers=0`), shuffled with a seeded generator, drop_last; `random`, `numpy` and "
            "`torch` seeded with the cell's seed; the last epoch cut at the grid's step count "
            "(`train_infomin.EpochCut`, the loader and its sampler)",
        ),
        (
            "pycontrast/main_contrast.py:19 (`TrainOptions().parse()` of `sys.argv`); "
            "options/train_options.py:60-65; learning/contrast_trainer.py:107-130 (`save`)",
            "the command line; the model and TensorBoard folders; a checkpoint each epoch",
            "`sys.argv` set to our numbers' command line while `main()` parses it "
            "(`train_infomin.command_line`: `--method InfoMin`, or `Customize` with the preset's "
            "values where our τ or jigsaw differ; `--cosine`, batch, epochs ⌈steps / steps an "
            "epoch⌉, lr, weight decay, momentum, `--nce_k` the queue, `--alpha` the EMA, `--beta` "
            "β, `--feat_dim`, `-j 0`); the folders and checkpoints in a temporary folder",
        ),
        (
            "pycontrast/learning/contrast_trainer.py:157-200 (`_shuffle_bn`); :265",
            "the keys' BN per GPU over a shuffle of the node's batch (8 GPUs: 32 keys a BN); the "
            "online BN per GPU (32 images, then their 288 patches)",
            "as is in the group of one: the key encoder's BN over all the step's keys, shuffled "
            "(ours: `key_bn_group_size` shuffled groups); the online BN over the whole batch "
            "(ours: `query_bn_group_size` 0)",
        ),
        (
            "pycontrast/learning/contrast_trainer.py:284-288 (`_compute_loss_accuracy`)",
            "the CE of the query's and the jigsaw query's (1 + K)-way logits",
            "the official function, its losses also kept every 20 steps as (1 − β)·CE + β·CE_jig, "
            "the loss stepped on at :287-288 (measurement only)",
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
