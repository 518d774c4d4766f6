"""ReSSL on ImageNet-100, the relational baseline of SCE's ablation (paper Tab. 5: 81.58%).

Everything as `sce_imagenet100.py` (built by its `get_config`: the paper's Sec. 4.1 setting:
ResNet-50, projector 2048 → 4096 (bias, ReLU) → 256 (bias) without BN as the SCE code's
`projector_resnet50_mlp2.yaml`, weak → target, strong → online, batch 512, SGD lr 0.3 × 512/256,
wd 1e-4, 5 warm-up epochs, queue 65536, momentum 0.996 → 1, 200 epochs, shuffle-BN with 8 key BN
groups, kNN monitor every 5000 steps); only the loss and τ_m change. ReSSL as its authors ran it
(EMA before the keys, m 0.999, 2048-4096-512 projector, ImageNet-1k) is `ressl_authors_imagenet.py`.
The ReSSL loss and τ_m 0.04 as `common.ressl_from_sce` says.
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from configs import common, sce_imagenet100


def get_config(arg=None):
    common.parse_arg(arg)  # only `runlocal`: not SCE's `imagenet2012`
    return common.ressl_from_sce(sce_imagenet100.get_config(arg))
