"""InfoMin's learned colour space: a pixel-wise invertible flow g (Tian et al. 2020, Sec. 4.2 and
appendix B.5, Fig. 11; the view generator was never released, PyContrast #35–#37).

g maps a 3-channel image to a 3-channel "colour space", pixel by pixel (only 1×1 convolutions, i.e.
dense layers on the channel axis, and ReLUs), bijectively; its channels are then split into the
views {g(X)_1, g(X)_{2:3}}. A block couples one channel X1 with the other two X2 (Fig. 11):

- volume-preserving (VP, additive coupling):  Y1 = X1 + F(X2);           Y2 = X2 + G(Y1)
- non-volume-preserving (NVP, affine):        Y1 = X1·e^{s_F(X2)} + t_F(X2); Y2 = X2·e^{s_G(Y1)} + t_G(Y1)

F, G: pixel-wise MLPs (Dense → ReLU → … → Dense); NVP's log-scales are `scale_bound·tanh(·)` so a
block's Jacobian stays bounded. Stacked blocks take channel 0, 1, 2, 0, … as X1 ("we alternatively
select the first, second, and the third channel as X1"). The paper gives no widths or depths: ours
are `hidden` and `num_blocks`. VP blocks have Jacobian determinant 1; `log_det` returns NVP's
per-pixel log |det| (0 for VP).
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax.numpy as jnp


class _PixelMLP(nn.Module):
    """Dense layers on the last (channel) axis with ReLUs between: a stack of 1×1 convolutions.
    The last layer starts at zero, so a fresh flow is the identity."""

    hidden: Sequence[int]
    out: int

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        for width in self.hidden:
            x = nn.relu(nn.Dense(width)(x))
        return nn.Dense(self.out, kernel_init=nn.initializers.zeros)(x)


class _Coupling(nn.Module):
    first: int  # the channel coupled as X1
    hidden: Sequence[int]
    volume_preserving: bool
    scale_bound: float

    def setup(self):
        n = 1 if self.volume_preserving else 2  # (shift) or (log-scale, shift)
        self.f = _PixelMLP(self.hidden, n * 1)
        self.g = _PixelMLP(self.hidden, n * 2)

    def _split(self, x):
        rest = [c for c in range(3) if c != self.first]
        return x[..., self.first : self.first + 1], x[..., rest]

    def _merge(self, x1, x2):
        parts = [x2[..., :1], x2[..., 1:]]
        parts.insert(self.first, x1)
        return jnp.concatenate(parts, axis=-1)

    def _affine(self, out, width):
        if self.volume_preserving:
            return jnp.zeros(out.shape[:-1] + (width,), out.dtype), out
        return self.scale_bound * jnp.tanh(out[..., :width]), out[..., width:]

    def __call__(self, x: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        x1, x2 = self._split(x)
        s1, t1 = self._affine(self.f(x2), 1)
        y1 = x1 * jnp.exp(s1) + t1
        s2, t2 = self._affine(self.g(y1), 2)
        y2 = x2 * jnp.exp(s2) + t2
        return self._merge(y1, y2), jnp.sum(s1, -1) + jnp.sum(s2, -1)

    def inverse(self, y: jnp.ndarray) -> jnp.ndarray:
        y1, y2 = self._split(y)
        s2, t2 = self._affine(self.g(y1), 2)
        x2 = (y2 - t2) * jnp.exp(-s2)
        s1, t1 = self._affine(self.f(x2), 1)
        x1 = (y1 - t1) * jnp.exp(-s1)
        return self._merge(x1, x2)


class PixelFlow(nn.Module):
    """g: `[..., 3]` → `[..., 3]`, pixel-wise and invertible (`inverse`); `log_det(x)` the
    per-pixel log |det ∂g/∂x| (`[...]`, 0 for VP). `split(y)` gives the two views (1 + 2
    channels)."""

    num_blocks: int = 4
    hidden: Sequence[int] = (16, 16)
    volume_preserving: bool = True
    scale_bound: float = 1.0

    def setup(self):
        self.blocks = [
            _Coupling(b % 3, tuple(self.hidden), self.volume_preserving, self.scale_bound)
            for b in range(self.num_blocks)
        ]

    def _forward(self, x):
        log_det = jnp.zeros(x.shape[:-1], x.dtype)
        for block in self.blocks:
            x, ld = block(x)
            log_det = log_det + ld
        return x, log_det

    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        if x.shape[-1] != 3:
            raise ValueError(f"PixelFlow maps 3 channels, got {x.shape[-1]}")
        return self._forward(x)[0]

    def log_det(self, x: jnp.ndarray) -> jnp.ndarray:
        return self._forward(x)[1]

    def inverse(self, y: jnp.ndarray) -> jnp.ndarray:
        for block in reversed(self.blocks):
            y = block.inverse(y)
        return y

    @staticmethod
    def split(y: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
        """The views {g(X)_1, g(X)_{2:3}}."""
        return y[..., :1], y[..., 1:]
