"""2-D convolution with a choice of implementation; the parameter is flax's `nn.Conv` kernel.

`Conv2d` holds one parameter, `kernel` `[kh, kw, C_in, C_out]` (no bias), exactly as `nn.Conv`,
so checkpoints and the PyTorch export do not depend on the implementation. Implementations:
- 'xla': `lax.conv_general_dilated` (cuDNN on GPU, the TPU convolution unit); on CPU its input
  goes through `fusion_barrier` when it has at least `CPU_FUSION_BARRIER_MIN_SIZE` elements
  (`uses_fusion_barrier`), which keeps XLA from recomputing the input's producers inside the
  kernel gradient's transpose (a faster 32-px ResNet-18 step);
- 'matmul': im2col by `kh·kw` strided slices of the padded input, concatenated on channels, then
  one `[N·oh·ow, kh·kw·C_in] @ [kh·kw·C_in, C_out]` matmul. Its gradient is two matmuls plus
  slice adjoints (pads), all of which XLA:CPU runs at matmul speed;
- 'dense': one `[N, h·w·C_in] @ [h·w·C_in, oh·ow·C_out]` matmul with the kernel's dense (Toeplitz)
  matrix (`dense_matrix`): h·w / (kh·kw) of im2col's FLOPs, so fewer on maps smaller than the
  kernel (a 3×3 conv on a 1-px map is a `[N, C] @ [C, F]` product with the centre tap);
- 'auto' (default): on the CPU backend 'dense' when the input has at most `CPU_DENSE_MAX_INPUT`
  pixels (and no more than the kernel has taps), else 'matmul' when the output is at most
  `CPU_MATMUL_MAX_OUTPUT` pixels on a side, else 'xla'; 'xla' on other backends.

Why: XLA:CPU's convolution is pathologically slow on tiny feature maps: 'matmul' and 'dense' run
them several times faster, and a ResNet-18 on 28-px inputs (ImageNet stem: stages at 7, 4, 2, 1 px)
trains 2–3× faster with 'auto'; at 4×4 and above neither wins consistently. The figures
(`benchmarks/conv_impl.py --layers`, `--resnets`) are in docs/performance.md, "The CPU convolution
paths".
"""

from functools import partial
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

CONV_IMPLS = ("auto", "xla", "matmul", "dense")
CPU_MATMUL_MAX_OUTPUT = 2  # output side (px) up to which 'auto' uses 'matmul' on CPU
CPU_DENSE_MAX_INPUT = 4  # input pixels (h·w) up to which 'auto' uses 'dense' on CPU
CPU_FUSION_BARRIER = True  # XLA convs on CPU read their input through `fusion_barrier` ...
CPU_FUSION_BARRIER_MIN_SIZE = 2**18  # ... when it has at least this many elements


def output_size(size: int, kernel: int, stride: int, pad: tuple[int, int]) -> int:
    """Output side of a convolution: floor((size + pads - kernel) / stride) + 1."""
    return (size + pad[0] + pad[1] - kernel) // stride + 1


def output_hw(in_hw, kernel_hw, strides, padding) -> tuple[int, int]:
    """`(oh, ow)` of a 2-D window op (`output_size` on each axis)."""
    return tuple(output_size(in_hw[a], kernel_hw[a], strides[a], padding[a]) for a in range(2))


def strided_taps(xp: jnp.ndarray, window, strides, out_hw) -> list[jnp.ndarray]:
    """The kh·kw strided slices `[N, oh, ow, C]` of a padded `xp` `[N, H, W, C]`, taps in row-major
    order: slice (i, j) holds, for every output pixel, the input pixel at (i, j) of its window (the
    im2col of `matmul_conv`, the windows of `pool.slice_max_pool`)."""
    (kh, kw), (sh, sw), (oh, ow) = window, strides, out_hw
    return [
        xp[:, i : i + sh * (oh - 1) + 1 : sh, j : j + sw * (ow - 1) + 1 : sw, :]
        for i in range(kh)
        for j in range(kw)
    ]


def matmul_conv(x: jnp.ndarray, kernel: jnp.ndarray, strides, padding) -> jnp.ndarray:
    """`x` `[N, H, W, C]` * `kernel` `[kh, kw, C, F]` → `[N, oh, ow, F]`, as
    `lax.conv_general_dilated(x, kernel, strides, padding, ('NHWC', 'HWIO', 'NHWC'))`."""
    kh, kw, cin, cout = kernel.shape
    oh, ow = output_hw(x.shape[1:3], (kh, kw), strides, padding)
    x = jnp.pad(x, ((0, 0), tuple(padding[0]), tuple(padding[1]), (0, 0)))
    taps = strided_taps(x, (kh, kw), strides, (oh, ow))
    patches = taps[0] if len(taps) == 1 else jnp.concatenate(taps, axis=-1)
    return jnp.dot(patches, kernel.reshape(kh * kw * cin, cout))


def tap_layout(
    in_hw: tuple[int, int], kernel_hw: tuple[int, int], strides, padding
) -> tuple[tuple[int, ...], ...]:
    """For each input pixel p (row-major) and output pixel q: the kernel tap `ky·kw + kx` that
    joins them, or -1 where none does (the tap would read padding)."""
    (h, w), (kh, kw), (sh, sw) = in_hw, kernel_hw, strides
    oh, ow = output_hw((h, w), (kh, kw), strides, padding)
    layout = np.full((h * w, oh * ow), -1)
    for oy, ox, ky, kx in np.ndindex(oh, ow, kh, kw):
        iy, ix = oy * sh + ky - padding[0][0], ox * sw + kx - padding[1][0]
        if 0 <= iy < h and 0 <= ix < w:
            layout[iy * w + ix, oy * ow + ox] = ky * kw + kx
    return tuple(map(tuple, layout.tolist()))


def dense_matrix(kernel: jnp.ndarray, layout: tuple[tuple[int, ...], ...]) -> jnp.ndarray:
    """Taps `[kh·kw, C, F]` → the dense (Toeplitz) `[P·C, Q·F]`: block (p, q) is the kernel's tap
    `layout[p][q]`, or zeros. One concatenation of the taps."""
    zero = jnp.zeros(kernel.shape[1:], kernel.dtype)
    rows = [jnp.concatenate([kernel[t] if t >= 0 else zero for t in row], axis=1) for row in layout]
    return jnp.concatenate(rows, axis=0)


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def _dense_product(x: jnp.ndarray, kernel: jnp.ndarray, layout) -> jnp.ndarray:
    """`x` `[N, P, C]` → `[N, Q·F]` = `x.reshape(N, P·C) @ dense_matrix(kernel, layout)`."""
    return _dense_product_fwd(x, kernel, layout)[0]


def _dense_product_fwd(x, kernel, layout):
    dense = dense_matrix(kernel, layout)
    return jnp.dot(x.reshape(x.shape[0], -1), dense), (x, kernel, dense)


def _dense_product_bwd(layout, residuals, g):
    """The input gradient through the dense matrix; each tap's kernel gradient as one product
    over the batch and the (p, q) pairs it joins, `[x_p1; x_p2; …]ᵀ @ [g_q1; g_q2; …]`: the
    batch contraction (a sharded axis) ends in the kernel's shape, so across devices the
    all-reduce moves the kernel's gradient, not the dense matrix's."""
    x, kernel, dense = residuals
    n, cout = x.shape[0], dense.shape[1] // len(layout[0])
    dx = jnp.dot(g, dense.T).reshape(x.shape)
    g = g.reshape(n, len(layout[0]), cout)
    pairs = {}
    for p, row in enumerate(layout):
        for q, t in enumerate(row):
            if t >= 0:
                pairs.setdefault(t, []).append((p, q))
    dk = [jnp.zeros_like(kernel[0])] * kernel.shape[0]
    for t, joined in pairs.items():
        xs = jnp.concatenate([x[:, p] for p, _ in joined], axis=0)
        gs = jnp.concatenate([g[:, q] for _, q in joined], axis=0)
        dk[t] = jnp.dot(xs.T, gs)
    return dx, jnp.stack(dk)


_dense_product.defvjp(_dense_product_fwd, _dense_product_bwd)


def dense_conv(x: jnp.ndarray, kernel: jnp.ndarray, strides, padding) -> jnp.ndarray:
    """The convolution as one `[N, h·w·C] @ [h·w·C, oh·ow·F]` matmul with the dense (Toeplitz)
    matrix of the kernel (`dense_matrix`). FLOPs h·w / (kh·kw) of im2col's: fewer when the map is
    smaller than the kernel (a 1-px map under a 3×3 kernel meets only the centre tap: 1/9 of
    im2col's work, none of it on padding)."""
    n, h, w, cin = x.shape
    kh, kw, _, cout = kernel.shape
    layout = tap_layout((h, w), (kh, kw), strides, padding)
    oh, ow = output_hw((h, w), (kh, kw), strides, padding)
    taps = kernel.reshape(kh * kw, cin, cout)
    y = _dense_product(x.reshape(n, h * w, cin), taps, layout)
    return y.reshape(n, oh, ow, cout)


def resolve_impl(
    impl: str, in_hw: tuple[int, int], kernel_hw: tuple[int, int], out_hw: tuple[int, int]
) -> str:
    """'xla' | 'matmul' | 'dense': what `impl` means for this layer on this backend ('auto' on
    CPU: 'dense' for inputs of at most `CPU_DENSE_MAX_INPUT` pixels and no more than the kernel's
    taps, 'matmul' for outputs of at most `CPU_MATMUL_MAX_OUTPUT` px on a side, else 'xla'; 'xla'
    on other backends)."""
    if impl not in CONV_IMPLS:
        raise ValueError(f"conv impl must be one of {CONV_IMPLS}, got {impl!r}")
    if impl != "auto":
        return impl
    if jax.default_backend() != "cpu":
        return "xla"
    if in_hw[0] * in_hw[1] <= min(CPU_DENSE_MAX_INPUT, kernel_hw[0] * kernel_hw[1]):
        return "dense"
    return "matmul" if max(out_hw) <= CPU_MATMUL_MAX_OUTPUT else "xla"


def fusion_barrier(x: jnp.ndarray, anchor: jnp.ndarray) -> jnp.ndarray:
    """`x` unchanged, behind a conditional that XLA cannot fuse across: its consumers read one
    materialised buffer instead of recomputing the element-wise ops that produced it.

    Why (XLA:CPU): the kernel gradient of `conv_general_dilated` transposes the conv's input
    (`[N, H, W, C]` → `[C, H, W, N]`), and XLA fuses that transpose with the whole element-wise
    chain that produced the input (BN, ReLU and the residual adds of the earlier blocks), re-reading
    up to 15 arrays in the transposed, cache-hostile order: about a quarter of a 32-px ResNet-18
    MoCo v2 step (`benchmarks/conv_impl.py --barrier`; docs/performance.md, "The CPU convolution
    paths").
    `lax.optimization_barrier` does not stop it (XLA:CPU removes barriers before fusion).

    The branch is picked at run time by `anchor`'s first element (use a replicated array, e.g. the
    conv's kernel, so the predicate needs no communication under sharding), so XLA cannot fold the
    conditional; both branches return `x` bit for bit (`x * 1.0`, not `x`: XLA drops a conditional
    whose branches are the same computation). The program around it may still round differently:
    XLA fuses (and contracts into FMAs) the input's producers in other ways with and without the
    barrier, so a step with and without it differs in the last digits (docs/performance.md, "The
    CPU convolution paths"), as any change of fusion can.
    """
    finite = jnp.isfinite(anchor.reshape(-1)[0])
    return jax.lax.cond(finite, lambda v: v, lambda v: v * 1.0, x)


def uses_fusion_barrier(x_shape: tuple[int, ...]) -> bool:
    """Whether an 'xla' conv with input shape `x_shape` reads it through `fusion_barrier`: on the
    CPU backend (`CPU_FUSION_BARRIER`) for inputs of at least `CPU_FUSION_BARRIER_MIN_SIZE`
    elements. The barrier pays off on big maps (a 32-px ResNet-18 at batch 64: its 'xla' convs'
    inputs have 0.5-4 M elements, all but the stem's 196,608) and costs compile and step time on
    small ones; the A/B that set the minimum is in docs/performance.md, "The CPU convolution
    paths"."""
    return (
        CPU_FUSION_BARRIER
        and jax.default_backend() == "cpu"
        and int(np.prod(x_shape)) >= CPU_FUSION_BARRIER_MIN_SIZE
    )


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
        out_h, out_w = output_hw(x.shape[1:3], (kh, kw), self.strides, self.padding)
        impl = resolve_impl(self.impl, x.shape[1:3], (kh, kw), (out_h, out_w))
        if impl != "xla":
            conv = matmul_conv if impl == "matmul" else dense_conv
            return conv(x, kernel, self.strides, self.padding)
        if uses_fusion_barrier(x.shape):
            x = fusion_barrier(x, kernel)
        return jax.lax.conv_general_dilated(
            x, kernel, self.strides, self.padding, dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
