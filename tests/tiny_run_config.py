"""`--config=tests/tiny_run_config.py[:METHOD]` for `python -m ssl_jax.main` (run from the repository
root): `tests.helpers.tiny_config(METHOD)`, a seconds-long run; used by tests/test_launch.py."""


def get_config(arg=None):
    from tests.helpers import tiny_config

    return tiny_config(arg or "mocov2")
