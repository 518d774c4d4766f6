"""A fake `sce/transforms/__init__.py` (the harness's tests): like the official one at 07cbe636,
it imports a module the commit does not have."""

from sce.transforms.logistic_regression_transform import *  # noqa: F403
