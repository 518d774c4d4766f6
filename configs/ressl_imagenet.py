"""ReSSL on ImageNet, the relational baseline of SCE in the paper's comparison (Sec. 4.2, Tab. 5:
70.2%).

The SCE paper compares with its baselines on ImageNet in the Sec. 4.2 setting, not in the LARS /
batch 4096 / symmetric setting of `scce_imagenet.py` (ReSSL needs the weak view on the target
side): the ablation setting (`scce_imagenet100.py`: ResNet-50, weak → target, strong → online,
batch 512, SGD wd 1e-4, 5 warm-up epochs, queue 65536, momentum 0.996 → 1, 200 epochs) with lr 0.5
× 512/256 and a 3-layer projector 2048-2048-256 with BN on every layer (`build(arg, method,
'imagenet2012')`). For the SCE side of that comparison use `scce_imagenet100.build(arg, 'sce',
'imagenet2012')`. ReSSL loss (`methods/ressl.py`, `losses.ressl`: cross-entropy between the
target's and the online network's relations to the queue, no positive) with τ 0.1 and τ_m 0.04 (the
ReSSL paper's values, solo-learn's defaults; the SCE paper uses "the best temperatures reported" by
ReSSL). `:runlocal` trains a few steps on Fashion-MNIST.
"""

import importlib.util
import os


def _sibling(name):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_ssl_jax_config_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def get_config(arg=None):
    return _sibling("scce_imagenet100").build(arg, "ressl", dataset="imagenet2012")
