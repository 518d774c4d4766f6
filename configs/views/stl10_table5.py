"""InfoMin Table 5 (Sec. 4.2, appendix B.5), stage 1 of 2: learn the view generator g on STL-10,
`python -m ssl_jax.view_learning --config=configs/views/stl10_table5.py:mode=semi,base=rgb
--workdir=DIR` (writes DIR/flow.npz); stage 2 is `configs/infomin_views_stl10_table5.py:flow=...`.

The paper: g learned on Table 5's "# of Images": `unsupervised` on the 100k `unlabelled` images,
`supervised` on the 5k labelled `train` ones, `semi` on all 105k (I_NCE on every image, the
classifiers on the 5k labelled: Eq. 3, "we sample an unlabeled batch and a labeled batch"); g, the
critic and the classifiers with Adam, lr 2e-4 for g and 6e-4 for the I_NCE approximator (B.5);
64-px crops of the 96-px images (B.2 follows CMC's STL-10 recipe). `mode=raw` learns nothing (g =
the identity): the "raw views" row, the base space's own split. Built by
`configs/views/color_fashion_mnist.py`'s `get_config` (the same g, critic, batch, τ, rates and crops)
on STL-10. Ours (the paper gives none of these):
g of 4 coupling blocks with 1×1-conv MLPs of 16-16 hidden units, small ConvNets as critic and
classifiers, batch 256, τ 0.1, 20,000 steps (≈ 49 epochs of 105k), RRC (0.2, 1) + flip crops (CMC's
AlexNet `--crop_low`, `train_CMC.py` L88). `semi` reads `train+unlabelled` (its first 5,000 images,
the labelled ones, are `num_labelled`). Arguments: `mode=semi|unsupervised|supervised|raw`,
`base=rgb|ydbdr` (Table 5's columns; also lab, ycbcr), `nvp` (non-volume-preserving g), `runlocal`
(4 steps on 256 color_fashion_mnist images at 32 px).
"""

from configs import common
from configs.views import color_fashion_mnist
from ssl_jax import configs

NUM_LABELLED = 5_000  # STL-10 'train'
# Table 5's images of each generator: (split, num_labelled)
SPLITS = {
    "unsupervised": ("unlabelled", 0),
    "supervised": ("train", NUM_LABELLED),
    "semi": ("train+unlabelled", NUM_LABELLED),
    "raw": ("unlabelled", 0),
}


def get_config(arg=None):
    a = common.parse_arg(arg, mode="semi", base="rgb", nvp=False)
    if a.mode not in SPLITS:
        raise configs.ConfigError(f"mode={a.mode!r} is not allowed; allowed: {tuple(SPLITS)}")
    c = color_fashion_mnist.get_config(arg)
    split, num_labelled = SPLITS[a.mode]
    if a.runlocal:  # the parent's 256 color_fashion_mnist images, 64 of them labelled if any
        c.num_labelled = 64 if num_labelled else 0
        return c
    # 64-px crops of the 96-px images (105k decoded would take 2.9 GB of host memory: not cached)
    common.stl10_unlabelled_data(c, image_size=64, std=common.CIFAR10_STD)
    c.data.train_split, c.num_labelled = split, num_labelled
    c.data.shuffle_buffer = 10_000
    c.steps = 20_000
    c.log_every = 500
    return c
