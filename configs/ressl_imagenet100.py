"""ReSSL on ImageNet-100, the relational baseline of SCE's ablation (paper Tab. 5: 81.58%).

Everything as `scce_imagenet100.py` (the paper's Sec. 4.1 setting: ResNet-50, weak → target, strong
→ online, batch 512, SGD lr 0.3 × 512/256, wd 1e-4, 5 warm-up epochs, queue 65536, momentum 0.996 →
1, 200 epochs); only the loss and τ_m change. The ReSSL loss takes τ 0.1 and τ_m 0.04
(`scce_cifar10.method_config` says what it computes and where the temperatures come from).
`:runlocal` trains a few steps on Fashion-MNIST.
"""

from ssl_jax import configs


def get_config(arg=None):
    return configs.sibling(__file__, "scce_imagenet100").build(arg, "ressl")
