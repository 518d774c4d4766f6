"""InfoMin on color_fashion_mnist at 32 px: the evidence runs (InfoMin vs MoCo v2, with and
without the jigsaw branch).

Not an official configuration. `infomin_stl10.py`, built by its `get_config`: InfoMin's method as
`infomin_imagenet.py` (τ 0.15, MLP head, EMA
after the optimiser step, queue, jigsaw weight 0.5, keys in 8 shuffled BN groups of 32) with aug
"D" at 32 px (`recipes.infomin(32)`: its 23-tap blur and RandAugment at full strength, as
PyContrast at any size) and the jigsaw mosaic scaled from 255/85/64 px to 36/12/9 px (a 27-px mosaic
of nine 9-px patches). Data, encoder, batch and SGD as `mocov2_color_fashion_mnist.py`, its
baseline (`common.small_budget`): ResNet-18 CIFAR stem at width 1/2, MLP 512-128, batch 256, 3 epochs, lr 0.06, wd 5e-4,
cosine, queue 4096, EMA 0.99 (ours, for 3 epochs). `get_config('jigsaw=False')`: InfoMin without
the jigsaw branch. `:runlocal`: a few steps of 32 images.
"""

from configs import common, infomin_stl10


def get_config(arg=None):
    a = common.parse_arg(arg, jigsaw=True)
    c = infomin_stl10.get_config(common.parent_arg(arg, "runlocal"))
    # one accelerator: the online network on the whole batch, the keys in 8 shuffled BN groups
    c.method_config.update(queue_size=4096, query_bn_group_size=0)
    c.ema.base = 0.99
    common.small_budget(c, color=True)
    c.optim.update(schedule_unit="step", final_lr=0.0, epoch_offset=0.0)  # cosine per step to 0
    common.infomin_views(c, jigsaw=a.jigsaw)  # at 32 px
    if a.runlocal:
        c.method_config.queue_size = 256
        common.runlocal(c)
    return c
