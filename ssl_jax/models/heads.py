"""MLP projector / predictor heads.

`MLPHead` is `[Linear → BN → ReLU] * len(hidden_dims) → Linear [→ BN(affine=False)]`, which covers:
- MoCo v2: `hidden_dims=(2048,), out_dim=128, use_bn=False` (Linear-ReLU-Linear, with biases);
- SCE / MoCo v3 ImageNet projector: `hidden_dims=(4096,), out_dim=256, hidden_bias=False,
  last_bias=False, last_bn=True`;
- SCE CIFAR projector: `hidden_dims=(512,), out_dim=128` (biases, BN on the hidden layer).

Linear layers are initialised as torch's `nn.Linear`: weight and bias U(±1/sqrt(fan_in)).
Module names: `fc{i}`, `bn{i}` for hidden layer i, `fc_out` and `bn_out` for the last layer.
"""

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from ssl_jax.models.batchnorm import BatchNorm

# torch nn.Linear default: kaiming_uniform(a=sqrt(5)) = U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
linear_kernel_init = nn.initializers.variance_scaling(1.0 / 3.0, "fan_in", "uniform")


def _linear_bias_init(fan_in: int):
    bound = 1.0 / float(fan_in) ** 0.5

    def init(key, shape, dtype=jnp.float32):
        return jax.random.uniform(key, shape, dtype, -bound, bound)

    return init


class MLPHead(nn.Module):
    """Projector / predictor MLP: `__call__(x [N, D_in], train, bn_groups=1) -> [N, out_dim]` f32.

    Attributes:
      hidden_dims: widths of the hidden layers (empty: a single Linear).
      out_dim: output width.
      hidden_bias: bias on the hidden Linear layers (redundant before BN; MoCo v3 / SCE: False).
      last_bias: bias on the last Linear layer.
      last_bn: BatchNorm without affine parameters after the last Linear (MoCo v3 / SCE-ImageNet).
      use_bn: BN after each hidden Linear (MoCo v2's head has none).
      dtype: compute dtype; params and BN statistics float32, output float32.
    """

    hidden_dims: tuple[int, ...]
    out_dim: int
    hidden_bias: bool = True
    last_bias: bool = True
    last_bn: bool = False
    use_bn: bool = True
    dtype: Any = jnp.float32

    def _dense(self, x: jnp.ndarray, features: int, use_bias: bool, name: str) -> jnp.ndarray:
        return nn.Dense(
            features,
            use_bias=use_bias,
            kernel_init=linear_kernel_init,
            bias_init=_linear_bias_init(x.shape[-1]),
            dtype=self.dtype,
            param_dtype=jnp.float32,
            name=name,
        )(x)

    @nn.compact
    def __call__(self, x: jnp.ndarray, train: bool, bn_groups: int = 1) -> jnp.ndarray:
        x = x.astype(self.dtype)
        for i, dim in enumerate(self.hidden_dims):
            x = self._dense(x, dim, self.hidden_bias, f"fc{i}")
            if self.use_bn:
                x = BatchNorm(dtype=self.dtype, name=f"bn{i}")(x, train, bn_groups)
            x = nn.relu(x)
        x = self._dense(x, self.out_dim, self.last_bias, "fc_out")
        if self.last_bn:
            x = BatchNorm(use_scale=False, use_bias=False, dtype=self.dtype, name="bn_out")(
                x, train, bn_groups
            )
        return x.astype(jnp.float32)


class JigsawHead(nn.Module):
    """PyContrast's `JigsawHead` (InfoMin's jigsaw branch, PIRL-style): `patch_head` (its `fc1`,
    the projector's shape: 'mlp' = Linear(D, D) → ReLU → Linear(D, d)) on every patch's pooled
    features, the `num_patches` embeddings of each image put in a random order, concatenated
    (`num_patches·d`) → Linear `fc2` → d. Not normalised (the method normalises).

    `__call__(features [N·k, D] image-major, order [N, k] a permutation of range(k) per image,
    train, bn_groups)` → `[N, d]` float32; embedding `order[n, j]` of image n goes to slot j (the
    code's `x[shuffle_ids]`)."""

    patch_head: MLPHead
    num_patches: int = 9
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(
        self, features: jnp.ndarray, order: jnp.ndarray, train: bool, bn_groups: int = 1
    ) -> jnp.ndarray:
        k = self.num_patches
        x = self.patch_head(features, train, bn_groups)  # [N·k, d]
        x = x.reshape(-1, k, x.shape[-1])
        x = jnp.take_along_axis(x, order[:, :, None], axis=1)
        x = x.reshape(x.shape[0], -1).astype(self.dtype)
        x = nn.Dense(
            self.patch_head.out_dim,
            kernel_init=linear_kernel_init,
            bias_init=_linear_bias_init(x.shape[-1]),
            dtype=self.dtype,
            param_dtype=jnp.float32,
            name="fc2",
        )(x)
        return x.astype(jnp.float32)
