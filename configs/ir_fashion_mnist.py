"""IR (memory-bank instance discrimination) on Fashion-MNIST: a small CPU run.

IR's loss and bank (τ 0.07, K 4096 uniform negatives, bank momentum 0.5) with the small encoder and recipe of
`mocov2_fashion_mnist.py`; the bank holds all 60,000 training images.
The encoder, data and SGD are `mocov2_fashion_mnist.setting`; the method values
`ir_imagenet.method_config`.
"""

from ssl_jax import configs


def get_config(arg=None):
    c = configs.base_config()
    c.method = "ir"
    c.method_config = configs.sibling(__file__, "ir_imagenet").method_config(arg, bank_size=60_000)
    configs.sibling(__file__, "mocov2_fashion_mnist").setting(c)
    c.data.views = ("fashion",)
    return configs.finalize(c, arg)
