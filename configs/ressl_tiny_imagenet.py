"""ReSSL on Tiny-ImageNet, the relational baseline of SCE (paper Tab. 5).

Everything as `scce_tiny_imagenet.py` (the official CIFAR-10 config on a Tiny-ImageNet image folder
at 64 px, see its docstring for the folder layout; the paper's values are in its unavailable
supplementary); only the loss and τ_m change. ReSSL loss (`methods/ressl.py`, `losses.ressl`:
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
    return _sibling("scce_tiny_imagenet").build(arg, "ressl")
