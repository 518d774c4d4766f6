"""ResNet-18/34/50 backbones (torchvision v1.5 layout) in Flax linen.

Matches `torchvision.models.resnet` up to the global average pool (no `fc`):
- padding is explicit and symmetric as in torch: 7x7/2 conv pad 3, every 3x3 conv pad 1 (stride 2
  included), max-pool 3/2 pad 1 (padded with -inf), 1x1 downsample convs pad 0. Never 'SAME', which
  pads asymmetrically at stride 2 and shifts every feature map by one pixel against torch;
- Bottleneck puts the stride on the 3x3 conv (v1.5); convs have no bias;
- BN eps 1e-5, momentum 0.1, running variance updated unbiased (see `batchnorm.BatchNorm`);
- init: convs kaiming-normal (fan_out, relu), BN gamma 1 / beta 0; optional zero gamma on the last
  BN of each block (`zero_init_residual`, off by default as torchvision).

Module names mirror torchvision so a state_dict can be produced mechanically (`torch_names.py`):
`conv1`, `bn1`, `layer{1..4}_{j}` (torch `layer1.0`), inside a block `conv1, bn1, conv2, bn2[,
conv3, bn3]`, `downsample_conv`, `downsample_bn` (torch `downsample.0`, `downsample.1`).

`stem='cifar'` replaces the stem by a 3x3 stride-1 pad-1 conv without max-pool (the usual CIFAR /
STL variant), `stem='stride2'` by a 3x3 stride-2 pad-1 conv without max-pool (28 px → 14 px before
stage 1: between the two in cost, for small grey images on a CPU); `width` multiplies every stage
width (base channels `round(64 * width)`).
"""

from typing import Any

import flax.linen as nn
import jax.numpy as jnp

from ssl_jax.models.batchnorm import BatchNorm
from ssl_jax.models.conv import CONV_IMPLS, Conv2d
from ssl_jax.models.pool import max_pool

# depth -> (block kind, blocks per stage)
STAGES = {
    18: ("basic", (2, 2, 2, 2)),
    34: ("basic", (3, 4, 6, 3)),
    50: ("bottleneck", (3, 4, 6, 3)),
}
EXPANSION = {"basic": 1, "bottleneck": 4}
# stem -> conv1 (kernel, stride, padding); only 'imagenet' max-pools after it (3/2, padding 1)
STEM_CONVS = {"imagenet": (7, 2, 3), "cifar": (3, 1, 1), "stride2": (3, 2, 1)}
STEMS = tuple(STEM_CONVS)

# torch.nn.init.kaiming_normal_(mode="fan_out", nonlinearity="relu"): N(0, 2 / fan_out);
# jax's "normal" is untruncated ("truncated_normal" is the truncated one).
conv_init = nn.initializers.variance_scaling(2.0, "fan_out", "normal")


def _pad(k: int) -> tuple[tuple[int, int], tuple[int, int]]:
    return ((k, k), (k, k))


def _conv(features: int, k: int, s: int, p: int, impl: str, dtype: Any, name: str) -> Conv2d:
    """k×k conv, stride s, symmetric pad p, no bias, kaiming init (torch's layout of a conv)."""
    return Conv2d(
        features,
        (k, k),
        strides=(s, s),
        padding=_pad(p),
        kernel_init=conv_init,
        impl=impl,
        dtype=dtype,
        param_dtype=jnp.float32,
        name=name,
    )


def base_width(width: float) -> int:
    """Channels of the first stage (and of the stem): round(64 * width)."""
    return int(round(64 * width))


def feature_dim(depth: int, width: float = 1.0) -> int:
    """Dimension of the pooled features: 512 * width (18/34) or 2048 * width (50)."""
    if depth not in STAGES:
        raise ValueError(f"depth must be one of {sorted(STAGES)}, got {depth!r}")
    return base_width(width) * 8 * EXPANSION[STAGES[depth][0]]


class _Block(nn.Module):
    """BasicBlock (two 3x3) or Bottleneck (1x1, 3x3 with the stride, 1x1 x4), torchvision names."""

    kind: str
    planes: int
    strides: int
    downsample: bool
    zero_init_last_bn: bool = False
    conv_impl: str = "auto"
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: jnp.ndarray, train: bool, bn_groups: int = 1) -> jnp.ndarray:
        conv = lambda feats, k, s, p, name: _conv(feats, k, s, p, self.conv_impl, self.dtype, name)
        bn = lambda name, zero=False: BatchNorm(
            scale_init=nn.initializers.zeros if zero else nn.initializers.ones,
            dtype=self.dtype,
            name=name,
        )
        s = self.strides
        if self.kind == "basic":
            out_planes = self.planes
            y = conv(self.planes, 3, s, 1, "conv1")(x)
            y = nn.relu(bn("bn1")(y, train, bn_groups))
            y = conv(self.planes, 3, 1, 1, "conv2")(y)
            y = bn("bn2", self.zero_init_last_bn)(y, train, bn_groups)
        else:
            out_planes = self.planes * EXPANSION["bottleneck"]
            y = conv(self.planes, 1, 1, 0, "conv1")(x)
            y = nn.relu(bn("bn1")(y, train, bn_groups))
            y = conv(self.planes, 3, s, 1, "conv2")(y)
            y = nn.relu(bn("bn2")(y, train, bn_groups))
            y = conv(out_planes, 1, 1, 0, "conv3")(y)
            y = bn("bn3", self.zero_init_last_bn)(y, train, bn_groups)
        residual = x
        if self.downsample:
            residual = conv(out_planes, 1, s, 0, "downsample_conv")(x)
            residual = bn("downsample_bn")(residual, train, bn_groups)
        return nn.relu(y + residual)


class ResNet(nn.Module):
    """ResNet backbone returning global-average-pooled features `[N, feature_dim]` float32.

    Attributes:
      depth: 18, 34 or 50.
      stem: 'imagenet' (7x7/2 conv, BN, ReLU, max-pool 3/2), 'cifar' (3x3/1 conv, BN, ReLU) or
        'stride2' (3x3/2 conv, BN, ReLU).
      width: multiplier of every stage width.
      dtype: compute dtype (float32 or bfloat16); params, BN statistics and the output are float32.
      zero_init_residual: zero-init the gamma of the last BN of each block (torchvision option).
      conv_impl: 'auto' | 'xla' | 'matmul' | 'dense' (`conv.Conv2d`; the parameters do not depend on it).
      stem_width: channels of the stem conv; 0 (default) = the first stage's `round(64 * width)`.
        CMC's `resnet50v1/v2/v3` keep a 64-channel stem at every width.
    """

    depth: int = 50
    stem: str = "imagenet"
    width: float = 1.0
    dtype: Any = jnp.float32
    zero_init_residual: bool = False
    conv_impl: str = "auto"
    stem_width: int = 0

    def __post_init__(self):
        if self.depth not in STAGES:
            raise ValueError(f"ResNet depth must be one of {sorted(STAGES)}, got {self.depth!r}")
        if self.stem not in STEMS:
            raise ValueError(f"ResNet stem must be one of {STEMS}, got {self.stem!r}")
        if not self.width > 0:
            raise ValueError(f"ResNet width must be > 0, got {self.width!r}")
        if self.conv_impl not in CONV_IMPLS:
            raise ValueError(
                f"ResNet conv_impl must be one of {CONV_IMPLS}, got {self.conv_impl!r}"
            )
        super().__post_init__()

    @property
    def feature_dim(self) -> int:
        return feature_dim(self.depth, self.width)

    @nn.compact
    def __call__(
        self, x: jnp.ndarray, train: bool, bn_groups: int = 1, stages: bool = False
    ) -> jnp.ndarray:
        """x: `[N, H, W, C]` (any C) → `[N, feature_dim]` float32; with `stages`, the global
        averages of every stage's output, concatenated (`[N, stage_features_dim]`: 960 for a
        ResNet-18 at width 1), a multi-scale probe feature that keeps the early stages' detail."""
        kind, blocks = STAGES[self.depth]
        base = base_width(self.width)
        x = x.astype(self.dtype)
        k, s, p = STEM_CONVS[self.stem]
        stem = self.stem_width or base
        x = _conv(stem, k, s, p, self.conv_impl, self.dtype, "conv1")(x)
        x = nn.relu(BatchNorm(dtype=self.dtype, name="bn1")(x, train, bn_groups))
        if self.stem == "imagenet":
            x = max_pool(x, (3, 3), (2, 2), _pad(1))  # torch's MaxPool2d(3, 2, padding=1)
        in_planes = stem
        pooled = []
        for i, n_blocks in enumerate(blocks):
            planes = base * 2**i
            for j in range(n_blocks):
                strides = 2 if (i > 0 and j == 0) else 1
                out_planes = planes * EXPANSION[kind]
                x = _Block(
                    kind=kind,
                    planes=planes,
                    strides=strides,
                    downsample=strides != 1 or in_planes != out_planes,
                    zero_init_last_bn=self.zero_init_residual,
                    conv_impl=self.conv_impl,
                    dtype=self.dtype,
                    name=f"layer{i + 1}_{j}",
                )(x, train, bn_groups)
                in_planes = out_planes
            pooled.append(jnp.mean(x.astype(jnp.float32), axis=(1, 2)))
        return jnp.concatenate(pooled, axis=-1) if stages else pooled[-1]
