"""JCL ablation setting: ResNet-18 on ImageNet-100 (Cai et al., NeurIPS 2020, Sec. 4.4 and
supplementary D/E).

From the paper: the 100-class ImageNet subset of CMC (Tian et al.; class list in supplementary D),
ResNet-18, 100 epochs, batch N = 128, lr 0.1 with cosine decay; M' = 9, λ 4.0, τ 0.2 (supplementary
E, the setting of the ablations and of the Fig. 3 visualisation). Not stated in the text (its Table
3 did not survive extraction): the rest "strictly follow[s] MoCo v2" (Sec. 4.1), so m 0.999, queue
65536, SGD momentum 0.9, wd 1e-4, MLP head 512-512-128 (hidden = feature width as MoCo v2's
`--mlp`), MoCo v2 augmentation at 224 px, shuffle-BN with one BN group per device, and the code's
per-epoch λ ramp.

Data: an image folder with one sub-folder per class, `train/` and `val/` (as CMC's ImageNet-100):
`--config.data.data_dir=/path/to/imagenet100`. `:runlocal` keeps the ResNet-18 but trains a few
steps on 256 Fashion-MNIST images.
`:keys=N` sets M' (and so the views): `--config=configs/jcl_imagenet100_r18.py:keys=5`.
Built on `jcl_imagenet_paper.py` (M' and λ from the paper, MoCo v2 elsewhere); this file sets what
the ablation setting changes.
"""

from ssl_jax import configs


def _imagenet100_r18(c):
    c.method_config.num_keys = 9
    c.data.name = "image_folder"
    c.data.data_dir = ""  # the ImageNet-100 folder (train/, val/)
    c.data.train_split = "train"
    c.data.eval_train_split = "train"
    c.data.eval_test_split = "val"
    c.model.backbone = "resnet18"
    c.model.projector.hidden_dims = (512,)  # hidden = feature width, as MoCo v2's `--mlp`
    c.global_batch_size = 128
    c.num_epochs = 100.0
    c.optim.base_lr = 0.1
    c.knn.every_steps = 10_000
    c.knn.num_train = 50_000


def get_config(arg=None):
    return configs.sibling(__file__, "jcl_imagenet_paper").build(arg, edit=_imagenet100_r18)
