"""Checks of `MODEL.WEIGHTS` against a Detectron2 config, before any model is built.

Detectron2 loads what it can and logs the rest: a torchvision `.pth` loads nothing into its
backbone (other names) and trains from random init, a pickle without `__author__` is read as a
Caffe2 blob dict, and a ResNet-18 file under a ResNet-50 config fails deep in the build with a
shape error. Each is refused here with one message that says what to do. No Detectron2 or torch
import: the file is read with `pickle`, the config as the few numbers `config_facts` takes.
"""

from __future__ import annotations

import os
import pickle
import re
import zipfile

import numpy as np

BLOCKS = {
    18: (2, 2, 2, 2),
    34: (3, 4, 6, 3),
    50: (3, 4, 6, 3),
    101: (3, 4, 23, 3),
    152: (3, 8, 36, 3),
}
BASIC_DEPTHS = (18, 34)  # BasicBlock ResNets; the others are bottleneck ones
EXPORT_HINT = "python -m ssl_jax.export --workdir=W --format=detectron2 --out=W.pkl"


class WeightsError(ValueError):
    """`MODEL.WEIGHTS` does not fit the config; the message says why and what to do."""


def config_facts(cfg) -> dict:
    """What the weights must match, from a Detectron2 `CfgNode`: ResNet depth, stem and res2
    channels, input channels (`len(MODEL.PIXEL_MEAN)`)."""
    r = cfg.MODEL.RESNETS
    return {
        "depth": int(r.DEPTH),
        "stem_channels": int(r.STEM_OUT_CHANNELS),
        "res2_channels": int(r.RES2_OUT_CHANNELS),
        "in_channels": len(cfg.MODEL.PIXEL_MEAN),
    }


def read_pickle(path: str) -> dict:
    """The Detectron2 pickle at `path`, refused unless it is one (see the module docstring)."""
    if not os.path.isfile(path):
        raise WeightsError(f"MODEL.WEIGHTS {path}: no such file")
    if zipfile.is_zipfile(path) or not path.endswith(".pkl"):
        raise WeightsError(
            f"MODEL.WEIGHTS {path}: not a Detectron2 pickle (.pkl); a torch / torchvision "
            "checkpoint (.pth) has torchvision's names, which Detectron2 does not map onto its "
            f"ResNet, so its backbone would train from random init. Export with: {EXPORT_HINT}"
        )
    try:
        with open(path, "rb") as f:
            data = pickle.load(f, encoding="latin1")
    except Exception as e:  # noqa: BLE001  (any unpickling failure means the same thing)
        raise WeightsError(f"MODEL.WEIGHTS {path}: unreadable pickle ({e})") from e
    if not isinstance(data, dict) or "model" not in data or "__author__" not in data:
        keys = sorted(data)[:5] if isinstance(data, dict) else type(data).__name__
        raise WeightsError(
            f"MODEL.WEIGHTS {path}: a pickle without 'model' and '__author__' (it has {keys}); "
            "Detectron2 would read it as a Caffe2 blob dict. A backbone pickle is "
            "{'model': {name: array}, '__author__': ..., 'matching_heuristics': True}, as "
            f"{EXPORT_HINT} writes"
        )
    return data


def weights_facts(model: dict) -> dict | None:
    """Depth, block kind, stem / res2 channels and input channels of a ResNet backbone pickle's
    `model` dict (Detectron2 names), or None when it holds no `stem.conv1.weight` (a full
    detector's checkpoint, which is not checked here)."""
    stem = model.get("stem.conv1.weight")
    if stem is None:
        return None
    blocks = []
    for stage in (2, 3, 4, 5):
        indices = {int(m.group(1)) for k in model if (m := re.match(rf"res{stage}\.(\d+)\.", k))}
        blocks.append(len(indices))
    bottleneck = "res2.0.conv3.weight" in model
    last = "conv3" if bottleneck else "conv2"
    res2 = model.get(f"res2.0.{last}.weight")
    shape = np.shape(stem)
    return {
        "blocks": tuple(blocks),
        "bottleneck": bottleneck,
        "stem_channels": int(shape[0]),
        "in_channels": int(shape[1]),
        "res2_channels": None if res2 is None else int(np.shape(res2)[0]),
    }


def _depth_of(found: dict) -> str:
    kinds = [d for d, b in BLOCKS.items() if b == found["blocks"]]
    kinds = [d for d in kinds if (d not in BASIC_DEPTHS) == found["bottleneck"]]
    return f"ResNet-{kinds[0]}" if kinds else f"a ResNet of {found['blocks']} blocks"


def check(path: str, expected: dict) -> dict | None:
    """Refuses the weights at `path` when they are not a Detectron2 backbone pickle that the config
    of `expected` (`config_facts`) builds; returns their facts (None for a full detector's)."""
    found = weights_facts(read_pickle(path)["model"])
    if found is None:
        return None
    depth = expected["depth"]
    fixes = []
    if found["blocks"] != BLOCKS.get(depth) or found["bottleneck"] == (depth in BASIC_DEPTHS):
        d = next((d for d in BLOCKS if _depth_of(found) == f"ResNet-{d}"), None)
        fixes.append(
            f"the weights are {_depth_of(found)}, the config builds ResNet-{depth}"
            + ("" if d is None else f" (set MODEL.RESNETS.DEPTH {d})")
        )
    if found["stem_channels"] != expected["stem_channels"]:
        fixes.append(
            f"the weights' stem has {found['stem_channels']} channels, the config "
            f"{expected['stem_channels']} (MODEL.RESNETS.STEM_OUT_CHANNELS)"
        )
    if found["res2_channels"] is not None and found["res2_channels"] != expected["res2_channels"]:
        fixes.append(
            f"the weights' res2 has {found['res2_channels']} output channels, the config "
            f"{expected['res2_channels']} (set MODEL.RESNETS.RES2_OUT_CHANNELS "
            f"{found['res2_channels']})"
        )
    if found["in_channels"] != expected["in_channels"]:
        grey = found["in_channels"] == 1
        fixes.append(
            f"the weights' stem reads {found['in_channels']} input channel(s), the config feeds "
            f"{expected['in_channels']} (one per value of MODEL.PIXEL_MEAN)"
            + (
                ": for a grey export set INPUT.FORMAT L and one-value MODEL.PIXEL_MEAN / "
                "MODEL.PIXEL_STD (the export's printed options)"
                if grey
                else ""
            )
        )
    if fixes:
        raise WeightsError(f"MODEL.WEIGHTS {path}: " + "; ".join(fixes))
    return found


BACKBONE_KEY = re.compile(r"(^|\.)(stem|res[2-5]\.\d+)\.")


def backbone_problems(incompatible) -> list[str]:
    """The backbone parameters a load left out: model keys under the stem / res2-5 blocks that
    were missing, checkpoint keys that matched nothing, shapes that differed. Heads that the
    checkpoint never had (RPN, box head, FPN, the extra res5 norm) are not problems."""
    problems = [f"missing {k}" for k in incompatible.missing_keys if BACKBONE_KEY.search(k)]
    problems += [f"unexpected {k}" for k in incompatible.unexpected_keys]
    problems += [
        f"shape {k}: checkpoint {tuple(a)}, model {tuple(b)}"
        for k, a, b in incompatible.incorrect_shapes
    ]
    return problems
