"""ReSSL on ImageNet-100, the relational baseline of SCE's ablation (paper Tab. 5: 81.58%).

Everything as `scce_imagenet100.py` (the paper's Sec. 4.1 setting: ResNet-50, weak → target, strong
→ online, batch 512, SGD lr 0.3 × 512/256, wd 1e-4, 5 warm-up epochs, queue 65536, momentum 0.996 →
1, 200 epochs); only the loss and τ_m change. ReSSL loss (`methods/ressl.py`, `losses.ressl`:
cross-entropy between the target's and the online network's relations to the queue, no positive)
with τ 0.1 and τ_m 0.04 (the ReSSL paper's values, solo-learn's defaults; the SCE paper uses "the
best temperatures reported" by ReSSL). `:runlocal` trains a few steps on Fashion-MNIST.
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
    return _sibling("scce_imagenet100").build(arg, "ressl")
