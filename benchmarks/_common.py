"""Shared set-up of the timing tools (`benchmarks/`) and the studies (`experiments/`): simulated
devices, a TensorFlow stand-in, config loading, ImageNet-sized photos and the peer comparison's
MoCo v2 config, imported as `benchmarks._common` (the install provides the `benchmarks` package)."""

from __future__ import annotations

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def simulate_devices(count: int) -> None:
    """Ask XLA:CPU for `count` host devices (`--xla_force_host_platform_device_count`). Call it
    before jax is imported; a count already in XLA_FLAGS is kept."""
    from ssl_jax import add_xla_flag

    if count > 1:
        add_xla_flag(f"--xla_force_host_platform_device_count={count}")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def stub_tensorflow_if_missing() -> bool:
    """On a host without TensorFlow (a GPU image that ships JAX and PyTorch only; TensorFlow's wheel is
    too large to carry there), make `import tensorflow[_datasets]` succeed with an inert stand-in, so
    the library's modules import and a step can be compiled and timed on synthetic batches. Anything
    that would *use* TensorFlow (the input pipeline, tfds) gets meaningless objects instead, so only
    `--step-only` style measurements may run after this. Returns whether the stand-in was installed."""
    import importlib.machinery
    import importlib.util
    import sys
    import types

    if importlib.util.find_spec("tensorflow") is not None:
        return False

    class _AnyType(type):
        def __getattr__(cls, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Any

    class _Any(metaclass=_AnyType):
        def __init__(self, *args, **kwargs):
            pass

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Any()

        def __call__(self, *args, **kwargs):
            return _Any()

    class _Module(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return _Any

    class _Finder:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("tensorflow", "tensorflow_datasets"):
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec):
            return _Module(spec.name)

        def exec_module(self, module):
            module.__path__ = []

    sys.meta_path.insert(0, _Finder())
    return True


def load_config(name: str, *, batch: int, dtype: str, overrides=()):
    """`configs/<name>.py[:arg]` (or a path) at global batch `batch` (0: the config's), queues
    rounded to a multiple of it, compute dtype `dtype`."""
    from ssl_jax import configs

    path = name if os.sep in name.split(":")[0] else os.path.join(ROOT, "configs", name)
    base, _, arg = path.partition(":")
    config = configs.load(
        base + ("" if base.endswith(".py") else ".py") + (f":{arg}" if arg else "")
    )
    if batch:
        config.global_batch_size = batch
        hp = config.method_config
        if "queue_size" in hp:
            hp.queue_size = max(batch, hp.queue_size // batch * batch)
    config.model.dtype = dtype
    for item in overrides:
        configs.apply_override(config, item)
    return config


def write_photos(folder: str, count: int, seed: int = 0) -> None:
    """`count` JPEG photos of about ImageNet's size: random crops (350–500 × 300–375) of scikit-image's
    colour sample photos, resized up where the photo is smaller."""
    import numpy as np
    from PIL import Image
    from skimage import data

    photos = [
        data.astronaut(),
        data.coffee(),
        data.chelsea(),
        data.rocket(),
        data.immunohistochemistry(),
    ]
    rng = np.random.default_rng(seed)
    for i in range(count):
        photo = Image.fromarray(photos[i % len(photos)]).resize((640, 512))
        w, h = int(rng.integers(350, 501)), int(rng.integers(300, 376))
        x, y = int(rng.integers(0, 640 - w)), int(rng.integers(0, 512 - h))
        photo.crop((x, y, x + w, y + h)).save(os.path.join(folder, f"{i:04d}.jpg"), quality=90)


# The peer comparison (`experiments/peer.py`): the same numbers on both sides.
PEER_NUMBERS = dict(batch=64, width=1.0, hidden=512, out_dim=128, queue=4096, temperature=0.2)
PEER_SHAPES = {  # what the benchmark chooses; the rest (size, channels, mean/std, EMA, lr, wd) is
    # the config's (`config_numbers`), sent to the peer by the parent
    "fashion28": dict(config="configs/mocov2_fashion_mnist.py", stem="imagenet", recipe="fashion"),
    "color32": dict(config="configs/mocov2_color_fashion_mnist.py", stem="cifar", recipe="mocov2"),
}


def peer_config(shape: str, overrides: tuple[str, ...] = ()):
    """The ssl_jax config of a shape: `PEER_SHAPES`' config file with its stem and `PEER_NUMBERS`' numbers,
    then `overrides` (`--jax-override key=value ...`, for ablations of the ssl_jax side)."""
    from ssl_jax import configs
    from ssl_jax.models import head_config

    s = PEER_SHAPES[shape]
    c = configs.load(os.path.join(ROOT, s["config"]))
    c.global_batch_size = PEER_NUMBERS["batch"]
    c.model.stem = s["stem"]
    c.model.width = PEER_NUMBERS["width"]
    c.model.projector = head_config(
        (PEER_NUMBERS["hidden"],), PEER_NUMBERS["out_dim"], use_bn=False
    )
    c.method_config.queue_size = PEER_NUMBERS["queue"]
    c.method_config.temperature = PEER_NUMBERS["temperature"]
    for item in overrides:
        configs.apply_override(c, item)
    return c
