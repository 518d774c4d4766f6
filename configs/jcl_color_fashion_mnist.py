"""JCL on color_fashion_mnist at 32 px, on RGB: the run to compare with
`mocov2_color_fashion_mnist.py`.

Not from a paper (the JCL code and paper have no small-data setting): everything but the method is
`mocov2_color_fashion_mnist.py`'s numbers (built by its `get_config`, turned into JCL by
`common.jcl_from_mocov2`: ResNet-18 CIFAR stem at width 1/2, MLP 512-128, batch
256, 3 epochs, SGD lr 0.06 wd 5e-4 cosine, m 0.99, queue 4096, shuffle-BN with 8 key groups, the
final probe table), as `jcl_fashion_mnist.py` repeats `mocov2_fashion_mnist.py`'s, so the two runs
differ only in the loss and in JCL's extra key crops (a test checks that the configs differ in
nothing else). The augmentation is MoCo v2's at 32 px without the blur (`recipes.mocov2(32,
blur=False)`: RRC (0.2, 1), jitter 0.4/0.4/0.4/0.1 p 0.8, grayscale p 0.2, flip), the recipe of
`jcl_cifar10.py` and of the baseline, in place of the fashion config's `fashion_mnist_default`
(brightness/contrast jitter only, for grey images). JCL's own numbers are the released code's, as
`jcl_fashion_mnist.py`: M' = 4 keys, λ 2.0 ramped per epoch as λ·(epoch+1)/epochs, τ 0.2, mean keys
in the queue; the M'·256 key crops in 8 shuffled BN groups of M'·32.
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_color_fashion_mnist.py:keys=8`.
`:runlocal` trains 6 steps of 32 images at width 1/8, with the full queue.
"""

from configs import common, mocov2_color_fashion_mnist


def get_config(arg=None):
    a = common.parse_arg(arg, keys=4)  # M' = 4: the released script's `k_crops=5`
    c = mocov2_color_fashion_mnist.get_config(common.parent_arg(arg, "keys"))
    if a.runlocal:
        c.method_config.queue_size = 4096  # the full queue under `:runlocal` too (MoCo v2: 256)
    return common.jcl_from_mocov2(c, a.keys)
