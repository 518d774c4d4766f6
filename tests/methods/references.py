"""Reference forms the Ring tests compare the methods with (no method calls them).

- `moco_ring`: MoCoRing's loss alone (the method's `losses.moco_ring_with_logits` also returns the
  ring it used).
- `iring_nce`: IRing's loss in its gathered form, holding the whole `[B, N]` similarity matrix (the
  methods draw the same rows from a sharded bank with `sampling.ring_negatives` and compute
  `losses.ir_nce` on them).
- `ring_percentiles` / `ring_fractions`: the code's (outer, inner) fractions ↔ the paper's
  percentiles (CNCE Eq. 6) of the similarity.
"""

import jax
import jax.numpy as jnp

from ssl_jax.methods import losses


def moco_ring(query, key, queue, temperature, outer, inner, max_outer=None):
    """MoCoRing (the code's `MoCoRing.get_loss`) → float32 scalar: the loss of
    `losses.moco_ring_with_logits` (same arguments)."""
    return losses.moco_ring_with_logits(query, key, queue, temperature, outer, inner, max_outer)[0]


def iring_nce(query, bank, indices, temperature, outer, inner, draws):
    """IRing (CNCE with a memory bank; the code's `NCERing.get_loss`), the gathered form.

    ```
    q = normalize(query);  pos = q·bank[idx]/τ
    ring = sort_desc(q·bankᵀ/τ)[:, int(inner·int(outer·N)) : int(outer·N)]   # own entry NOT excluded
    L    = −mean_b( pos − logsumexp([pos, ring[b, draws[b]]]) )
    ```
    The own entry is normally among the closest and then removed by the inner cut. `inner = 0` is the
    intended NCEBall (the top `outer·N` rows of the bank). The official `NCEBall` takes its "bank size"
    from the batch dimension, so its ball is the top int(0.1·B) entries of each row (and it crashes
    for B < 10): the methods do not copy that.

    query `[B, D]` (normalised here; gradient flows), bank `[N, D]` L2-normalised (stop-gradient),
    indices `[B]` each query's own bank row (the positive), outer / inner the code's fractions
    (Python floats), draws `[B, k−1]` int positions in the ring, in `[0, stop − start)` (the code draws
    them uniformly with replacement, k − 1 = 4095) → float32 scalar.
    """
    q = losses.l2_normalize(jnp.asarray(query).astype(jnp.float32))
    bank = jax.lax.stop_gradient(jnp.asarray(bank).astype(jnp.float32))
    pos = jnp.sum(q * bank[jnp.asarray(indices)], axis=-1) / temperature
    start, stop = losses.ring_positions(bank.shape[0], outer, inner)
    top, _ = jax.lax.top_k(jnp.einsum("bd,kd->bk", q, bank) / temperature, stop)
    neg = jnp.take_along_axis(top[:, start:], jnp.asarray(draws), axis=1)
    return jnp.mean(jnp.logaddexp(pos, jax.nn.logsumexp(neg, axis=-1)) - pos)


def ring_percentiles(outer: float, inner: float) -> tuple[float, float]:
    """The code's fractions → the paper's percentiles: w_l = 100(1 − outer), w_u = 100(1 − inner·outer)
    (defaults 0.1 / 0.1 → negatives between the 90th and the 99th percentile of similarity)."""
    return 100.0 * (1.0 - outer), 100.0 * (1.0 - inner * outer)


def ring_fractions(w_l: float, w_u: float) -> tuple[float, float]:
    """The paper's percentiles (0 ≤ w_l < w_u ≤ 100) → the code's (outer, inner): the inverse of
    `ring_percentiles`."""
    if not 0.0 <= w_l < w_u <= 100.0:
        raise ValueError(f"percentiles need 0 <= w_l < w_u <= 100, got {w_l}, {w_u}")
    outer = 1.0 - w_l / 100.0
    return outer, (1.0 - w_u / 100.0) / outer
