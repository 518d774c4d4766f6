"""A fake JCL `moco` package (the harness's tests): what the official `moco/__init__.py` exports."""

from .loader import MultiCropsTransform
from .moco_unlimit_key_default import MoCoUnlimitedKeysDefault
from .utils import concat_all_gather, setup_logger

__all__ = ["MoCoUnlimitedKeysDefault", "MultiCropsTransform", "concat_all_gather", "setup_logger"]
