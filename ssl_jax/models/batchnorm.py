"""Batch normalisation with PyTorch semantics and grouped (per-device / split) statistics.

Differences from `flax.linen.BatchNorm`, all chosen to match `torch.nn.BatchNorm{1,2}d`:
- `momentum` is the weight of the NEW batch statistic: `running = (1 - m) * running + m * batch`
  (torch's convention; flax's `momentum=0.9` is torch's `momentum=0.1`);
- the running variance is updated with the UNBIASED batch variance `var * n / (n - 1)`, while the
  activations are normalised with the biased one;
- statistics are always computed in float32, whatever the compute dtype;
- `bn_groups` splits the batch into contiguous groups with their own statistics.

Under `jax.jit` with the batch sharded over a mesh axis, `bn_groups=1` gives statistics over the
global batch (SyncBN: XLA inserts the all-reduce). With `bn_groups=G`, a multiple of the number of
devices the batch is sharded over, each device holds whole groups, so normalisation needs no
communication (per-device BN, as in one-GPU-per-process PyTorch training); `G` > 1 on one device is
SplitBN. The running statistics are the mean over groups of the group statistics (one [C]-sized
all-reduce, the only collective).
"""

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax.typing import Initializer


class BatchNorm(nn.Module):
    """BatchNorm over all axes but the last (features), torch semantics.

    Attributes:
      momentum: torch-style momentum (weight of the new batch statistic), 0.1 as torch.
      epsilon: added to the variance, 1e-5 as torch.
      use_scale, use_bias: the affine parameters (`affine=False` in torch is both False).
      scale_init, bias_init: initialisers of the affine parameters (torch: ones, zeros).
      dtype: output dtype; None keeps the input dtype. Statistics are float32 regardless.
      param_dtype: dtype of the affine parameters.

    Variables: params `scale`, `bias` `[C]`; batch_stats `mean` (init 0), `var` (init 1), float32.
    """

    momentum: float = 0.1
    epsilon: float = 1e-5
    use_scale: bool = True
    use_bias: bool = True
    scale_init: Initializer = nn.initializers.ones
    bias_init: Initializer = nn.initializers.zeros
    dtype: Any = None
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: jnp.ndarray, train: bool, bn_groups: int = 1) -> jnp.ndarray:
        """x: `[N, ..., C]`; `train` uses batch statistics and updates the running ones.

        `bn_groups` must divide N; it is ignored when `train` is False.
        """
        features = x.shape[-1]
        out_dtype = self.dtype or x.dtype
        ra_mean = self.variable("batch_stats", "mean", jnp.zeros, (features,), jnp.float32)
        ra_var = self.variable("batch_stats", "var", jnp.ones, (features,), jnp.float32)
        scale = (
            self.param("scale", self.scale_init, (features,), self.param_dtype)
            if self.use_scale
            else None
        )
        bias = (
            self.param("bias", self.bias_init, (features,), self.param_dtype)
            if self.use_bias
            else None
        )

        # float32 statistics for float32/bfloat16 activations (float64 only if x64 tests ask for it)
        stat_dtype = jnp.promote_types(jnp.float32, x.dtype)
        xf = x.astype(stat_dtype)
        if train:
            n = x.shape[0]
            if bn_groups < 1 or n % bn_groups:
                raise ValueError(
                    f"bn_groups={bn_groups} must be a positive divisor of the batch size {n}"
                )
            # [G, N/G, ..., C]: contiguous groups, so a batch sharded over devices keeps whole
            # groups on each device when G is a multiple of the device count.
            xg = xf.reshape((bn_groups, n // bn_groups) + x.shape[1:])
            axes = tuple(range(1, xg.ndim - 1))
            count = 1
            for a in axes:
                count *= xg.shape[a]
            mean = jnp.mean(xg, axis=axes, keepdims=True)  # [G, 1, ..., 1, C]
            var = jnp.mean(jnp.square(xg - mean), axis=axes, keepdims=True)  # biased
            if not self.is_initializing():
                m = self.momentum
                group_mean = mean.reshape(bn_groups, features).mean(axis=0)
                unbiased = var.reshape(bn_groups, features) * (count / max(count - 1, 1))
                ra_mean.value = ((1.0 - m) * ra_mean.value + m * group_mean).astype(
                    ra_mean.value.dtype
                )
                ra_var.value = ((1.0 - m) * ra_var.value + m * unbiased.mean(axis=0)).astype(
                    ra_var.value.dtype
                )
            mul = jax.lax.rsqrt(var + self.epsilon)
            if scale is not None:
                mul = mul * scale.astype(stat_dtype)
            y = (xg - mean) * mul
            if bias is not None:
                y = y + bias.astype(stat_dtype)
            y = y.reshape(x.shape)
        else:
            mul = jax.lax.rsqrt(ra_var.value.astype(stat_dtype) + self.epsilon)
            if scale is not None:
                mul = mul * scale.astype(stat_dtype)
            y = (xf - ra_mean.value.astype(stat_dtype)) * mul
            if bias is not None:
                y = y + bias.astype(stat_dtype)
        return y.astype(out_dtype)
