"""Test set-up: 8 simulated CPU devices, fast compiles and a shared compile cache, TensorFlow kept
off accelerators, quiet logs."""

import os
import sys

from tests.process_env import COMPILE_CACHE, xla_flags  # no JAX import

# fast compiles and one compile cache, for this process and those it starts (tests/process_env.py)
os.environ.setdefault("XLA_FLAGS", xla_flags(8))
for _name, _value in COMPILE_CACHE.items():  # read by JAX on import
    os.environ.setdefault(_name, _value)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# torch's CUDA build brings triton (GPU kernels for torch.compile), whose import segfaults in a
# process that has loaded TensorFlow and XLA first (torchvision imports it through torch._dynamo);
# nothing here compiles torch code: torch takes an unimportable triton as absent
sys.modules.setdefault("triton", None)

import jax  # noqa: E402

import ssl_jax  # noqa: E402, F401  (its XLA_FLAGS defaults, before any backend starts)

jax.config.update("jax_threefry_partitionable", True)

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def pretrained_workdir(tmp_path_factory):
    """A real pretraining workdir: 2 MoCo v2 steps of the tiny config (ResNet-18 CIFAR stem, width
    1/8, 16 px Fashion-MNIST), shared by the evaluate and export tests."""
    from ssl_jax import train
    from tests.helpers import tiny_config

    workdir = str(tmp_path_factory.mktemp("pretrained"))
    config = tiny_config("mocov2")
    config.total_steps = 2
    train.train_and_evaluate(config, workdir)
    return workdir
