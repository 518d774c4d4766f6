"""Mechanical mapping between ssl_jax ResNet variables and torchvision `state_dict` names/layouts.

Flax path → torch key:
- modules: `layer{i}_{j}` → `layer{i}.{j}`, `downsample_conv` → `downsample.0`,
  `downsample_bn` → `downsample.1`, every other name unchanged (`conv1`, `bn1`, `conv2`, ...);
- leaves: conv `kernel` HWIO → `weight` OIHW; dense `kernel` [in, out] → `weight` [out, in];
  BN `scale` → `weight`, `bias` → `bias`; batch_stats `mean` → `running_mean`, `var` →
  `running_var`, plus `num_batches_tracked` (int64 scalar) for every BN.
A 3-channel, ImageNet-stem, width-1 run loads strictly into a torchvision ResNet whose `fc` is
`nn.Identity()`; any other (one channel, the CIFAR stem, another width) needs `conv1` / `maxpool` /
the stages rebuilt first: `python -m ssl_jax.export` prints those lines and writes them beside the
weights (`export.loading_facts`).
"""

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
from flax import traverse_util

_LAYER = re.compile(r"^layer(\d+)_(\d+)$")
_MODULE_TO_TORCH = {"downsample_conv": "downsample.0", "downsample_bn": "downsample.1"}


def _module_to_torch(name: str) -> str:
    m = _LAYER.match(name)
    if m:
        return f"layer{m.group(1)}.{m.group(2)}"
    return _MODULE_TO_TORCH.get(name, name)


def _backbone(tree: Mapping[str, Any]) -> Mapping[str, Any]:
    tree = dict(tree)
    return tree["backbone"] if "backbone" in tree else tree


def flax_to_torchvision_state_dict(
    params: Mapping[str, Any], batch_stats: Mapping[str, Any], num_batches_tracked: int = 0
) -> dict[str, np.ndarray]:
    """ResNet params + batch_stats → `{torchvision key: np.ndarray}` (float32; counters int64).

    `params`/`batch_stats` may be the backbone's trees or an SSLModel's (their `backbone` subtree is
    used). `num_batches_tracked` fills every BN's counter (e.g. the training step); torch only reads
    it when BN momentum is None.
    """
    out: dict[str, np.ndarray] = {}
    bn_modules: list[str] = []
    for path, value in traverse_util.flatten_dict(_backbone(params)).items():
        *modules, leaf = path
        prefix = ".".join(_module_to_torch(m) for m in modules)
        value = np.asarray(value, dtype=np.float32)
        if leaf == "kernel" and value.ndim == 4:
            out[f"{prefix}.weight"] = np.ascontiguousarray(value.transpose(3, 2, 0, 1))
        elif leaf == "kernel" and value.ndim == 2:
            out[f"{prefix}.weight"] = np.ascontiguousarray(value.T)
        elif leaf == "scale":
            out[f"{prefix}.weight"] = value
        elif leaf == "bias":
            out[f"{prefix}.bias"] = value
        else:
            raise ValueError(f"no torchvision name for parameter {'/'.join(path)}")
    for path, value in traverse_util.flatten_dict(_backbone(batch_stats)).items():
        *modules, leaf = path
        prefix = ".".join(_module_to_torch(m) for m in modules)
        if leaf == "mean":
            out[f"{prefix}.running_mean"] = np.asarray(value, dtype=np.float32)
            bn_modules.append(prefix)
        elif leaf == "var":
            out[f"{prefix}.running_var"] = np.asarray(value, dtype=np.float32)
        else:
            raise ValueError(f"no torchvision name for batch statistic {'/'.join(path)}")
    for prefix in bn_modules:
        out[f"{prefix}.num_batches_tracked"] = np.asarray(num_batches_tracked, dtype=np.int64)
    return out
