"""CMC's AlexNet encoder (one per view), in Flax linen.

Official code: HobbitLong/CMC `models/alexnet.py` L31–75 (`alexnet_half`): five conv blocks
(conv without bias → BN → ReLU, max-pool 3/2 after conv1, conv2 and conv5), then fc6 and fc7
(Linear → BN1d → ReLU); fc8 (Linear to 128) is the model's head. Its channels are CaffeNet's
(96, 256, 384, 384, 256; fc 4096) halved, `96//2` etc. (L35–73): here `width` multiplies the
full network's channels, so CMC's `alexnet_half` is `width=0.5` (what `cmc.build_model` builds from
`model.width=1.0`, as for its ResNets).

Two layouts (`stem`):
- 'imagenet': the official layers for 224 px: conv1 11×11/4 pad 2, conv2 5×5 pad 2, conv3–5 3×3
  pad 1 (L35–61); conv5's map is 6×6 (L63: `256 * 6 * 6 // 2`).
- 'cifar': the small-image AlexNet of CMC's and InfoMin's STL-10 runs at 64 px (InfoMin appendix
  B.1–B.2: "a tiny AlexNet, following [DIM, CMC]", its first layer taking 1 or 2 channels). That
  code was never released (CMC issues #4, #67), so the layout is ours: every conv 3×3 stride 1 pad
  1 (at 64 px the official strides leave conv5 a 1×1 map), the official channels and pools, so
  conv5's map is 7×7 at 64 px (64 → 31 → 15 → 7).

`__call__(x, train, bn_groups=1, stages=False)`: `x` `[N, H, W, C]` (any C) → fc7's output
`[N, feature_dim]` float32 (the head's input and the pooled features of the evaluators); with
`stages`, conv5's map after its pool, flattened (the layer CMC's linear probe reads, README
`--layer 5`), fc6 and fc7, concatenated. Module names: `conv{1..5}`, `bn{1..5}`, `fc6`, `bn6`,
`fc7`, `bn7`. Init as torch's defaults (the official code sets none): convs and Linear weights
U(±1/√fan_in), Linear biases likewise.
"""

from typing import Any

import flax.linen as nn
import jax.numpy as jnp

from ssl_jax.models.batchnorm import BatchNorm
from ssl_jax.models.conv import CONV_IMPLS, Conv2d
from ssl_jax.models.heads import _linear_bias_init, linear_kernel_init
from ssl_jax.models.pool import max_pool

STEMS = ("imagenet", "cifar")
# the full network's channels (CaffeNet, `alexnet.py` L35–73 before `//2`)
CONV_CHANNELS = (96, 256, 384, 384, 256)
FC_WIDTH = 4096
POOLED = (True, True, False, False, True)  # a 3/2 max-pool after conv1, conv2, conv5
# stem -> (kernel, stride, pad) of conv1..conv5
LAYOUTS = {
    "imagenet": ((11, 4, 2), (5, 1, 2), (3, 1, 1), (3, 1, 1), (3, 1, 1)),
    "cifar": ((3, 1, 1),) * 5,
}


def channels(width: float) -> tuple[int, ...]:
    """Channels of conv1..conv5 at `width` (0.5: CMC's 48, 128, 192, 192, 128)."""
    return tuple(int(round(c * width)) for c in CONV_CHANNELS)


def feature_dim(width: float = 1.0) -> int:
    """fc6 / fc7 width: round(4096 · width) (2048 for CMC's half)."""
    return int(round(FC_WIDTH * width))


class AlexNet(nn.Module):
    """CMC's AlexNet (one view's encoder; module docstring).

    Attributes:
      stem: 'imagenet' (the official 224-px layers) or 'cifar' (3×3 stride-1 convs, 64 px).
      width: multiplier of every channel count of the full network (CMC: 0.5 per view).
      dtype: compute dtype; params, BN statistics and the output are float32.
      conv_impl: `conv.Conv2d`'s implementation (the parameters do not depend on it).
    """

    stem: str = "cifar"
    width: float = 0.5
    dtype: Any = jnp.float32
    conv_impl: str = "auto"

    def __post_init__(self):
        if self.stem not in STEMS:
            raise ValueError(f"AlexNet stem must be one of {STEMS}, got {self.stem!r}")
        if not self.width > 0:
            raise ValueError(f"AlexNet width must be > 0, got {self.width!r}")
        if self.conv_impl not in CONV_IMPLS:
            raise ValueError(
                f"AlexNet conv_impl must be one of {CONV_IMPLS}, got {self.conv_impl!r}"
            )
        super().__post_init__()

    @property
    def feature_dim(self) -> int:
        return feature_dim(self.width)

    @nn.compact
    def __call__(
        self, x: jnp.ndarray, train: bool, bn_groups: int = 1, stages: bool = False
    ) -> jnp.ndarray:
        x = x.astype(self.dtype)
        for i, (c, (k, s, p), pool) in enumerate(
            zip(channels(self.width), LAYOUTS[self.stem], POOLED, strict=True), start=1
        ):
            x = Conv2d(
                c,
                (k, k),
                strides=(s, s),
                padding=((p, p), (p, p)),
                kernel_init=linear_kernel_init,
                impl=self.conv_impl,
                dtype=self.dtype,
                param_dtype=jnp.float32,
                name=f"conv{i}",
            )(x)
            x = nn.relu(BatchNorm(dtype=self.dtype, name=f"bn{i}")(x, train, bn_groups))
            if pool:
                x = max_pool(x, (3, 3), (2, 2), ((0, 0), (0, 0)))  # torch's MaxPool2d(3, 2)
        conv5 = x.reshape(x.shape[0], -1)  # torch flattens NCHW; the order only permutes fc6
        x, outs = conv5, [conv5.astype(jnp.float32)]
        for name in ("6", "7"):
            x = nn.Dense(
                self.feature_dim,
                kernel_init=linear_kernel_init,
                bias_init=_linear_bias_init(x.shape[-1]),
                dtype=self.dtype,
                param_dtype=jnp.float32,
                name=f"fc{name}",
            )(x)
            x = nn.relu(BatchNorm(dtype=self.dtype, name=f"bn{name}")(x, train, bn_groups))
            outs.append(x.astype(jnp.float32))
        return jnp.concatenate(outs, axis=-1) if stages else outs[-1]
