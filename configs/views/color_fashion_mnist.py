"""InfoMin's view learning (Sec. 4.2, appendix B.5) on color_fashion_mnist at 32 px, for
`python -m ssl_jax.view_learning --config=configs/views/color_fashion_mnist.py --workdir=DIR`.

The paper (STL-10): a pixel-wise flow g (VP or NVP), critic and classifiers trained with Adam,
lr 2e-4 for g and 6e-4 for the I_NCE approximator; 100k unlabelled + 5k labelled images. Ours: g of
4 coupling blocks with 1×1-conv MLPs of 16-16 hidden units (the paper gives no sizes), small
ConvNets as critic and classifiers, batch 256, τ 0.1, 2,000 steps, RRC (0.2, 1) + flip crops, and
the first 3,000 of the 60,000 training images labelled (5 %, the paper's 5k / 105k). Arguments:
`mode=unsupervised|supervised|semi` (default semi), `base=rgb|ydbdr|lab|ycbcr` (g's input
space), `nvp` (non-volume-preserving), `runlocal` (a few steps of 32 images).
"""

import ml_collections

from configs import common
from ssl_jax import configs


def get_config(arg=None):
    a = common.parse_arg(arg, mode="semi", base="rgb", nvp=False)
    c = ml_collections.ConfigDict()
    c.data = configs.base_config().data
    common.color_fashion_mnist_data(c, size=32)
    c.data.train_subset = 0
    c.data.shuffle_buffer = 60_000
    c.global_batch_size = 256
    c.mode = a.mode
    c.base = a.base
    c.flow = ml_collections.ConfigDict(
        dict(num_blocks=4, hidden=(16, 16), volume_preserving=not a.nvp)
    )
    c.num_classes = 10
    c.num_labelled = 3000
    c.temperature = 0.1
    c.lr_g = 2e-4
    c.lr_critic = 6e-4
    c.crop_scale = (0.2, 1.0)
    c.steps = 2000
    c.log_every = 100
    c.seed = 0
    if a.runlocal:
        c.data.train_subset = 256
        c.data.shuffle_buffer = 256
        c.global_batch_size = 32
        c.num_labelled = 64
        c.steps = 4
        c.log_every = 2
    return c
