"""ReSSL on ImageNet, the relational baseline of SCE in the paper's comparison (Sec. 4.2, Tab. 5:
70.2%).

The SCE paper compares with its baselines on ImageNet in the Sec. 4.2 setting, not in the LARS /
batch 4096 / symmetric setting of `scce_imagenet.py` (ReSSL needs the weak view on the target side):
the ablation setting (`scce_imagenet100.py`: ResNet-50, weak → target, strong → online, batch 512,
SGD wd 1e-4, 5 warm-up epochs, queue 65536, momentum 0.996 → 1, 200 epochs) with lr 0.5 × 512/256
and a 3-layer projector 2048-2048-256 with BN on every layer (`build(arg, method, 'imagenet2012')`).
For the SCE side of that comparison use `scce_imagenet100.build(arg, 'sce', 'imagenet2012')`. The
ReSSL loss takes τ 0.1 and τ_m 0.04 (`scce_cifar10.method_config` says what it computes and where
the temperatures come from). `:runlocal` trains a few steps on Fashion-MNIST.
"""

from ssl_jax import configs


def get_config(arg=None):
    return configs.sibling(__file__, "scce_imagenet100").build(arg, "ressl", dataset="imagenet2012")
