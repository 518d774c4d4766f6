"""2-D convolution with a choice of implementation; the parameter is flax's `nn.Conv` kernel.

`Conv2d` holds one parameter, `kernel` `[kh, kw, C_in, C_out]` (no bias), exactly as `nn.Conv`,
so checkpoints and the PyTorch export do not depend on the implementation. Implementations:
- 'xla': `lax.conv_general_dilated` (cuDNN on GPU, the TPU convolution unit);
- 'matmul': im2col by `kh·kw` strided slices of the padded input, concatenated on channels, then
  one `[N·oh·ow, kh·kw·C_in] @ [kh·kw·C_in, C_out]` matmul. Its gradient is two matmuls plus
  slice adjoints (pads), all of which XLA:CPU runs at matmul speed;
- 'auto' (default): 'matmul' on the CPU backend when the output is at most
  `CPU_MATMUL_MAX_OUTPUT` pixels on a side, else 'xla'.

Why: XLA:CPU's convolution is pathologically slow on tiny feature maps. Measured on the 2-core dev
machine (`benchmarks/conv_impl.py --layers`), one 3×3 conv at batch 64, forward / forward+backward
(ms): 2×2×128 channels 9.4 / 19.1 with 'xla' against 1.1 / 2.3 with 'matmul'; 1×1×256: 2.9 / 8.2
against 0.8 / 2.3; at 4×4 and above neither wins consistently (within ~2× either way, noisy). A
ResNet-18 on 28-px inputs (ImageNet stem: stages at 7, 4, 2, 1 px) trains 2–3× faster with 'auto'
(`benchmarks/conv_impl.py --resnets`).
"""

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

CONV_IMPLS = ("auto", "xla", "matmul")
CPU_MATMUL_MAX_OUTPUT = 2  # output side (px) up to which 'auto' uses 'matmul' on CPU


def output_size(size: int, kernel: int, stride: int, pad: tuple[int, int]) -> int:
    """Output side of a convolution: floor((size + pads - kernel) / stride) + 1."""
    return (size + pad[0] + pad[1] - kernel) // stride + 1


def matmul_conv(x: jnp.ndarray, kernel: jnp.ndarray, strides, padding) -> jnp.ndarray:
    """`x` `[N, H, W, C]` * `kernel` `[kh, kw, C, F]` → `[N, oh, ow, F]`, as
    `lax.conv_general_dilated(x, kernel, strides, padding, ('NHWC', 'HWIO', 'NHWC'))`."""
    kh, kw, cin, cout = kernel.shape
    sh, sw = strides
    oh = output_size(x.shape[1], kh, sh, padding[0])
    ow = output_size(x.shape[2], kw, sw, padding[1])
    x = jnp.pad(x, ((0, 0), tuple(padding[0]), tuple(padding[1]), (0, 0)))
    taps = [
        x[:, i : i + sh * (oh - 1) + 1 : sh, j : j + sw * (ow - 1) + 1 : sw, :]
        for i in range(kh)
        for j in range(kw)
    ]
    patches = taps[0] if len(taps) == 1 else jnp.concatenate(taps, axis=-1)
    return jnp.dot(patches, kernel.reshape(kh * kw * cin, cout))


def use_matmul(impl: str, out_h: int, out_w: int) -> bool:
    """Whether `impl` means the matmul path for an output of `out_h × out_w` on this backend."""
    if impl not in CONV_IMPLS:
        raise ValueError(f"conv impl must be one of {CONV_IMPLS}, got {impl!r}")
    if impl == "auto":
        small = max(out_h, out_w) <= CPU_MATMUL_MAX_OUTPUT
        return small and jax.default_backend() == "cpu"
    return impl == "matmul"


class Conv2d(nn.Module):
    """Bias-free 2-D convolution, NHWC, explicit padding `((top, bottom), (left, right))`."""

    features: int
    kernel_size: tuple[int, int]
    strides: tuple[int, int] = (1, 1)
    padding: tuple[tuple[int, int], tuple[int, int]] = ((0, 0), (0, 0))
    kernel_init: Any = nn.initializers.lecun_normal()
    impl: str = "auto"
    dtype: Any = jnp.float32
    param_dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        kh, kw = self.kernel_size
        kernel = self.param(
            "kernel", self.kernel_init, (kh, kw, x.shape[-1], self.features), self.param_dtype
        )
        x, kernel = x.astype(self.dtype), kernel.astype(self.dtype)
        out_h = output_size(x.shape[1], kh, self.strides[0], self.padding[0])
        out_w = output_size(x.shape[2], kw, self.strides[1], self.padding[1])
        if use_matmul(self.impl, out_h, out_w):
            return matmul_conv(x, kernel, self.strides, self.padding)
        return jax.lax.conv_general_dilated(
            x, kernel, self.strides, self.padding, dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
