"""ReSSL on CIFAR-10, the relational baseline of SCE (paper Tab. 5) in SCE's CIFAR-10 setting.

Everything as `scce_cifar10.py` (the official SCE CIFAR-10 config: ResNet-18 CIFAR stem, 512-512-128
projector, weak/soft view → target, strong view → online, queue 4096, momentum 0.99, SplitBN 8
groups, SGD lr 0.06 wd 5e-4, batch 256, 200 epochs): the SCE paper reproduces its baselines with
"the same architecture for all methods"; only the loss and τ_m change.
ReSSL loss (`methods/ressl.py`, `losses.ressl`: cross-entropy between the target's and the
online network's relations to the queue, no positive) with τ 0.1 and τ_m 0.04 (the ReSSL paper's
values, solo-learn's defaults; the SCE paper uses "the best temperatures reported" by ReSSL).
`:runlocal` trains a few steps on Fashion-MNIST.
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
    return _sibling("scce_cifar10").build(arg, "ressl")
