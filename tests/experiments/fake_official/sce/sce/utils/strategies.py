"""A fake `sce/utils/strategies.py` (the harness's tests): like the official module under
Lightning 2, it cannot be imported; the harness must put its stand-in in its place."""

raise ImportError("cannot import name 'DDP2Strategy' from 'pytorch_lightning.strategies'")
