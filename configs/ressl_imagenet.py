"""ReSSL on ImageNet, the relational baseline of SCE in the paper's comparison (Sec. 4.2, Tab. 5:
70.2%).

The SCE paper compares with its baselines on ImageNet in the Sec. 4.2 setting, not in the LARS /
batch 4096 / symmetric setting of `sce_imagenet.py` (ReSSL needs the weak view on the target side):
`sce_imagenet100.py:imagenet2012`, built by its `get_config` (the ablation setting: ResNet-50, weak →
target, strong → online, batch 512, SGD wd 1e-4, 5 warm-up epochs, queue 65536, momentum 0.996 → 1,
200 epochs, on ImageNet-1k with lr 0.5 × 512/256 and a 3-layer projector 2048-2048-256 with BN on
every layer; kNN monitor every 5000 steps on the first 100,000 training images, ours), with the
ReSSL loss and τ_m 0.04 (`common.ressl_from_sce`) and bfloat16 compute on GPU/TPU. ReSSL as its
authors ran it (EMA before the keys, m 0.999, batch 256, lr 0.05, 2048-4096-512 projector without
BN, queue 131072) is `ressl_authors_imagenet.py`.
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from configs import common, sce_imagenet100


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = sce_imagenet100.get_config(",".join(filter(None, ("imagenet2012", arg))))
    common.ressl_from_sce(c)
    if not a.runlocal:
        c.model.dtype = "auto"  # bfloat16 compute on GPU/TPU, float32 on CPU
    return c
