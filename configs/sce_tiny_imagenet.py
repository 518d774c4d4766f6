"""SCE on Tiny-ImageNet (64 px, 200 classes): the official CIFAR-10 config on an image folder.

The paper's Tiny-ImageNet hyper-parameters are only in its supplementary material, which is not
available here, and neither the CEA-LIST/SCE nor the eztorch code has a Tiny-ImageNet run config
(the SCE code only has a folder datamodule). So every value starts from the CIFAR-10 config
(`sce_cifar10.py`, built by its `get_config`: ResNet-18 with the CIFAR stem, 512-512-128 projector, soft → target / strong →
online, τ 0.1, τ_m 0.05, λ 0.5, queue 4096, momentum 0.99, SplitBN 8 groups, SGD lr 0.06 wd 5e-4, 5
warm-up epochs, batch 256, 200 epochs), with the recipes at 64 px and the ImageNet mean/std (our
choice). Check the supplementary table before comparing numbers.

Data: `data.name='image_folder'`, `data.data_dir` = the `tiny-imagenet-200` folder (set it on the
command line, `--config.data.data_dir=...`): 'train' = `train/<wnid>/images/*.JPEG` (labels from the
class folders). The release's `val/` is flat (labels in `val/val_annotations.txt`): move each image
into `val/<wnid>/` first, otherwise the kNN monitor / probe have no labelled test split.
`:runlocal` trains on Fashion-MNIST.
"""

import ml_collections

from configs import common, sce_cifar10
from ssl_jax.data import recipes


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = sce_cifar10.get_config(arg)
    if a.runlocal:
        return c
    common.image_folder_data(c, test_split="val")  # the tiny-imagenet-200 folder
    c.data.image_size = 64
    c.data.mean, c.data.std = common.IMAGENET_MEAN, common.IMAGENET_STD
    c.data.recipes = ml_collections.ConfigDict(
        {"soft": recipes.cifar_soft(64), "strong": recipes.cifar_strong(64)}
    )
    return c
