"""Encoders: ResNet backbone + MLP projector (+ optional predictor), built from `config.model`.

`config.model` schema (ml_collections.ConfigDict):
```
backbone            'resnet18' | 'resnet34' | 'resnet50' | 'alexnet' (CMC's, `alexnet.py`)
stem                'imagenet' | 'cifar' | 'stride2'     (default 'imagenet'; AlexNet: its layout)
width               float > 0                            (default 1.0)
dtype               'float32' | 'bfloat16' | 'auto'      (compute dtype; default 'float32'; 'auto' =
                    'bfloat16' when jax.default_backend() is a GPU or TPU, else 'float32',
                    resolved when the model is built: `resolve_dtype`)
zero_init_residual  bool                                 (default False, as torchvision)
conv_impl           'auto' | 'xla' | 'matmul' | 'dense'  (default 'auto'; see models/conv.py)
stem_width          int >= 0: stem conv channels         (default 0 = round(64 * width); CMC: 64;
                    ResNets only, as `zero_init_residual`)
projector           head config (below), required
predictor           None / absent = no predictor; a head config = a predictor unless its
                    `enabled` is False (so defaults may carry a disabled predictor's shape)
```
Head config: `hidden_dims` (tuple of ints), `out_dim` (int), `hidden_bias` (True), `last_bias`
(True), `last_bn` (False), `use_bn` (True), and for the predictor only `enabled` (bool, default
True); `head_config(...)` builds one. Unknown keys and values raise a ValueError naming the key and
the allowed values.

Parameter tree of `SSLModel`: `{'backbone': ResNet names (see resnet.py), 'projector': {...},
'predictor': {...}}`; batch statistics in the 'batch_stats' collection with the same paths.
"""

from ssl_jax.models.alexnet import AlexNet
from ssl_jax.models.batchnorm import BatchNorm
from ssl_jax.models.heads import JigsawHead, MLPHead
from ssl_jax.models.resnet import ResNet, feature_dim
from ssl_jax.models.ssl_model import (
    ALEXNETS,
    BACKBONES,
    DTYPE_CHOICES,
    DTYPES,
    SSLModel,
    TwoEncoderModel,
    backbone_only,
    build_head,
    build_model,
    build_two_encoder_model,
    check_config,
    compute_dtype,
    head_config,
    resolve_dtype,
)

__all__ = [
    "ALEXNETS", "AlexNet", "BACKBONES", "BatchNorm", "DTYPES", "DTYPE_CHOICES", "JigsawHead",
    "MLPHead", "ResNet", "SSLModel", "TwoEncoderModel", "backbone_only", "build_head", "build_model",
    "build_two_encoder_model", "check_config", "compute_dtype", "feature_dim", "head_config",
    "resolve_dtype",
]  # fmt: skip
