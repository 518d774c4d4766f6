"""A fake `sce/models/siamese/base.py` (the harness's tests): the `hydra` it imports, as a small
`instantiate` (the `_target_` called with the config's other keys and the call's)."""

import importlib
import types


def instantiate(config, **kwargs):
    config = dict(config)
    module, _, name = config.pop("_target_").rpartition(".")
    config.pop("_recursive_", None)
    return getattr(importlib.import_module(module), name)(**config, **kwargs)


hydra = types.SimpleNamespace(utils=types.SimpleNamespace(instantiate=instantiate))
