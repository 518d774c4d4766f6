"""CMCRing (ours: CMC with Ring/CNCE negatives; no code exists) on color_fashion_mnist at 32 px.

Everything as `cmc_color_fashion_mnist.py` (built by its `get_config`: the baseline, Lab views L |
ab, two encoders at half the width, linear heads to 128, τ 0.07, bank momentum 0.5, a 60,000-row
bank per view, ResNet-18 CIFAR stem at width 1/2, batch 256, 3 epochs, SGD 0.06 cosine, the final
probe table) except the method, the loss and the ring keys: the negatives of each direction (L
against the ab bank, ab against the L bank) are 4095 draws (the Ring code's k − 1; the parent's
4096) from a ring of outer 0.1 / inner 0.1 (the 90th–99th similarity percentiles), and the loss is
the softmax form (NCERing's; CMC's NCE assumes uniform noise, so `loss='nce'` is refused — compare
with `cmc_color_fashion_mnist.py` at `method_config.loss=softmax` for the same loss on uniform
negatives). Not annealed by default (the released Ring configs); `:anneal=linear` anneals the outer
fraction 1.0 → 0.1 over the first half of training (the paper's 100 of 200 epochs), `:ball` is the
ball lesion, `:space=ycbcr|ydbdr` other colour spaces (the parent's `:flow` is not taken).
`:runlocal` as `cmc_color_fashion_mnist.py`: 6 steps of 32 images, a bank of 256 and 64 draws.
"""

from configs import cmc_color_fashion_mnist, common


def get_config(arg=None):
    a = common.parse_arg(arg, space="lab", anneal="constant", ball=False)  # no `flow`
    c = cmc_color_fashion_mnist.get_config(common.parent_arg(arg, "anneal", "ball"))
    common.ring_from(c, "cmcring", a.anneal, a.ball, anneal_epochs=1.5)  # half of the 3 epochs
    c.method_config.loss = "softmax"  # NCERing's; CMC's NCE assumes uniform noise
    if not a.runlocal:  # `:runlocal` keeps the parent's 64 draws
        c.method_config.num_negatives = 4095  # the Ring code's k − 1
    return c
