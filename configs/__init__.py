"""Run configs, one file per method × dataset (`python -m ssl_jax.main --config=configs/X.py[:arg]`).

Each file's `get_config(arg)` writes one run's numbers; `common.py` holds what they share (the
`:arg` parser, dataset blocks, the `:runlocal` shrink). Library code (`ssl_jax/`) never imports
this package.
"""
