"""MoCoRing (CNCE with a MoCo queue, the code's `MoCoRing`) on CIFAR-10: the code's numbers.

ResNet-18 with the ImageNet stem + MLP 512→512→128, batch 256, SGD lr 0.03 momentum 0.9 wd 1e-4, 200
epochs with ×0.1 at int(0.68·200) = 136 and int(0.83·200) = 166, τ 0.07, a queue of 65,536 keys, key
encoder EMA 0.999. Input as the code's default transforms: images upsampled to 224 px (RRC 0.2–1,
grayscale 0.2, colour jitter 0.4 always, flip, ImageNet mean/std; eval Resize 256 / CenterCrop 224);
`:mocov2_32x32` the code's 32-px MoCo v2 transforms, blur p 0.5 included
(`common.ring_code_transforms`). Baseline: `mocov2` with these numbers and `queue_size=4096`, no
ring keys (the code's MoCo: K 4096, τ 0.07). Annealing: off by default, as every released config
(`ConstantThresholdPolicy(0.1)`); `:anneal=linear` is the paper's setting (outer 1.0 → 0.1 over 100
epochs of steps, then 0.1); `:anneal=step|exponential|adaptive_loss` the code's other policies;
`:ball` the ball lesion (no inner cut). Sources: mhw32/contrastive-ring-public @fb3e1c2
(`config/pretrain/{nce,mocov2}/*.json`, `src/systems/systems.py`,
`src/objectives/{instdisc,moco,memory}.py`, `src/utils/policy.py`, `src/datasets/datasets.py`).
`:runlocal` trains a few steps on Fashion-MNIST (3 channels) with a bank/queue of 256.
"""

import ml_collections

from configs import common
from ssl_jax import configs


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False, mocov2_32x32=False)
    c = configs.base_config()
    c.method = "mocoring"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.07,
            queue_size=65536,  # the code's MoCoRing k (MoCo baseline: 4096)
            # the code's Lightning `dp` backend: shuffle-BN is a permutation on one device
            # (no effect); BN over the whole batch
            query_bn_group_size=0,
            key_bn_group_size=0,
            shuffle_bn=False,
            **common.ring_keys(a.anneal, a.ball),  # outer 0.1, inner 0.1
        )
    )
    c.ema.base = 0.999  # key encoder EMA, before the keys
    c.ema.schedule = "constant"

    common.cifar10_data(c)
    if a.runlocal:  # not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        c.method_config.queue_size = 256  # divides the 32 keys of a runlocal step
    common.ring_code_transforms(c, "ring", 2, a.mocov2_32x32)

    common.ring_code_training(c)  # ResNet-18, SGD 0.03, 200 epochs, ×0.1 at 136 and 166
    if a.runlocal:
        common.runlocal(c)
    return c
