"""IRing (CNCE with a memory bank, the code's `NCERing`) on STL-10: the code's numbers.

Everything as `ir_stl10.py` (built by its `get_config`: the code's `NCE` baseline, ResNet-18 with
the ImageNet stem + MLP 512→512→128, batch 256, SGD lr 0.03 momentum 0.9 wd 1e-4, 200 epochs with
×0.1 at 136 and 166, τ 0.07, k − 1 = 4095 draws from a bank of all 5,000 training images with m 0,
initialised uniform then L2-normalised, the code's default 224-px transforms or `:mocov2_32x32`);
only the method and the ring keys change: outer 0.1 / inner 0.1, every released config's
(`common.ring_keys`: negatives between the 90th and 99th percentile of similarity). Annealing: off
by default, as every released config (`ConstantThresholdPolicy(0.1)`); `:anneal=linear` is the
paper's setting (outer 1.0 → 0.1 over 100 epochs of steps, then 0.1);
`:anneal=step|exponential|adaptive_loss` the code's other policies; `:ball` the ball lesion (no
inner cut). Sources: mhw32/contrastive-ring-public @fb3e1c2 (`config/pretrain/nce/*.json`,
`src/objectives/instdisc.py` `NCERing`, `src/utils/policy.py`).
`:runlocal` as `ir_stl10.py` (a few steps on Fashion-MNIST, 3 channels, with a bank of 256).
"""

from configs import common, ir_stl10


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False, mocov2_32x32=False)
    c = ir_stl10.get_config(common.parent_arg(arg, "anneal", "ball"))
    c.method = "iring"
    c.method_config.update(common.ring_keys(a.anneal, a.ball))  # outer 0.1, inner 0.1
    return c
