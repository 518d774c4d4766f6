"""InfoMin Table 5 (Sec. 4.2), stage 2 of 2: CMC with its small AlexNet on STL-10, on the views
of a generator g from stage 1 (`configs/views/stl10_table5.py`, which writes `flow.npz`):
`python -m ssl_jax.main --config=configs/infomin_views_stl10_table5.py:flow=DIR/flow.npz
--workdir=OUT`. Without `flow`, CMC runs on the raw `space` split (default YDbDr: Y | DbDr, the
"raw views" row; stage 1's `mode=raw` gives the same through g = identity, also for RGB).

The paper: "In representation learning stage, all 105k images are used" (Table 5 caption), with
"the training recipe in [CMC]" and "a tiny AlexNet, with the modification of adapting the first
layer to input of 1 or 2 channels" (appendix B.2, via B.5); linear evaluation on the 5k `train`
images, tested on the 8k `test` ones, "100 epochs, single crop" (B.2). Numbers, from HobbitLong/CMC
(@7b227be): τ 0.1 for STL-10 (README L65), K 16384 negatives (`train_CMC.py` L67), bank momentum
0.5 (L69), 128-d embeddings (L70), NCE loss (the default; `--softmax` L66), SGD lr 0.03 (L49)
momentum 0.9 (L55) wd 1e-4 (L54), 240 epochs (L46) with lr × 0.1 (L51) at 120, 160, 200 (L50),
batch 256 (the README's AlexNet command, L77), RRC scale (0.2, 1) for AlexNet (L88, L96–97), flip,
no colour jitter; encoders `alexnet_half` per view (`models/alexnet.py` L21–22, L31–75: here
`model.backbone='alexnet'` at `width` 1.0, split into two halves), fc8 a linear head to 128
(L72–74), BN over the whole batch (one GPU in the README's command). 64-px crops of the 96-px images;
evaluation resizes them to 64 px (the maintainer's STL-10 transforms, CMC issue #4).

Departures, ours: the 64-px AlexNet layout (`models/alexnet.py`, stem 'cifar': 3×3 stride-1
convs; the paper's STL-10 network was never released, CMC issues #4, #67); the features probed are
fc7's (the head's input; `features='stages'` adds conv5 and fc6); the bank holds 105,000 rows
(`train+unlabelled`: the 5k labelled first); the default job's kNN monitor and final probe table
in place of the paper's 100-epoch linear classifier (`configs/linear_probe.py:ring`: 100 epochs on
cached features, or `:moco` with its augmentation). `:runlocal` trains 6 steps on 256
color_fashion_mnist images at 32 px, width 1/8, a bank of 256 and 64 negatives.
"""

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config

NUM_TRAIN = 105_000  # STL-10 'train' (5k) + 'unlabelled' (100k)


def get_config(arg=None):
    a = common.parse_arg(arg, flow="", space="ydbdr")
    c = configs.base_config()
    c.method = "cmc"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.1,  # README L65: 0.1 for STL-10
            num_negatives=16384,  # train_CMC.py L67
            bank_size=NUM_TRAIN,
            bank_momentum=0.5,  # L69
            loss="nce",
            query_bn_group_size=0,  # one GPU: BN over the whole batch
        )
    )

    common.cifar10_data(c)
    c.data.name = "stl10"
    c.data.train_split = "train+unlabelled"  # Table 5: all 105k images
    c.data.eval_train_split = "train"
    c.data.eval_test_split = "test"
    c.data.image_size = 64  # 64-px crops; evaluation resizes the 96-px images
    c.data.cache = False  # 105k × 96 × 96 × 3 decoded would take 2.9 GB of host memory
    if a.runlocal:  # not on CPU CI
        common.color_fashion_mnist_data(c, size=32)
        c.method_config.update(bank_size=256, num_negatives=64)
    c.data.views = ("cmc",)  # one crop; the model splits it into its two views
    view = recipes.cmc(c.data.image_size, a.space, scale=(0.2, 1.0))  # train_CMC.py L88
    if a.flow:  # g's colour space in place of `space`
        view = (*view[:-1], {"op": "learned_flow", "path": a.flow})
    c.data.recipes = ml_collections.ConfigDict({"cmc": view})

    c.model.backbone = "alexnet"
    c.model.stem = "cifar"  # the 64-px layout
    c.model.width = 1.0  # two alexnet_half encoders (width 0.5 each)
    c.model.projector = head_config((), 128, use_bn=False)  # fc8 (alexnet.py L72-74)

    c.global_batch_size = 256  # README L77
    c.num_epochs = 240.0  # train_CMC.py L46
    c.optim.name = "sgd"
    c.optim.base_lr = 0.03  # L49
    c.optim.momentum = 0.9  # L55
    c.optim.weight_decay = 1e-4  # L54
    c.optim.schedule = "step"
    c.optim.schedule_unit = "epoch"
    c.optim.decay_epochs = (120.0, 160.0, 200.0)  # L50
    c.optim.decay_factor = 0.1  # L51
    c.evals.knn.every_steps = 4000
    if a.runlocal:
        common.runlocal(c)
    return c
