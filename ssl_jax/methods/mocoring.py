"""MoCoRing (CNCE with a MoCo queue; Wu et al., ICLR 2021; the code's `MoCoRing`,
`src/objectives/moco.py`).

MoCo v2 (`mocov2.py`: EMA key encoder updated before the keys, queue written after the loss) with
the negatives restricted to a ring of each query's similarities to the queue, ALL of them used:
```
pos  = q·k/τ
ring = sort_desc(q·queueᵀ/τ)[:, int(inner·int(outer·K)) : int(outer·K)]   # 5,898 for K = 65,536
L    = −mean(pos − logsumexp([pos, ring]))                                # losses.moco_ring_with_logits
```
The queue's `[B, K]` similarities are small: `lax.top_k` with the largest outer set the schedule
reaches (`ring.max_outer`), then the ring's columns (masked, so an annealed outer fraction compiles
once). The outer fraction follows `method_config.anneal` (`methods/ring.py`); `ring_inner = 0` is the
ball lesion (`MoCoBall`). Logs `train/ring_outer`, `train/ring_lo`, `train/ring_hi` and
`train/neg_sim` (mean cosine of the ring's entries).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ssl_jax.config_checks import hp_field
from ssl_jax.methods import common, losses, mocov2, ring
from ssl_jax.methods.mocov2 import EMA_BEFORE_KEYS, USES_TARGET  # noqa: F401  (interface)

# MoCo v2's checks and queue (its enqueue after the loss), then the ring's
check_config, buffer_specs, init_buffers, update_buffers = ring.compose(
    mocov2, "queue_size", "queue"
)
buffer_metrics = common.queue_metrics


@dataclasses.dataclass(frozen=True)
class Hparams(ring.RingHparams, mocov2.Hparams):
    """MoCo v2's plus the ring's; τ 0.07 and K 65,536 as the code's MoCoRing configs."""

    temperature: float = hp_field(0.07, low=0.0, low_open=True)


def loss_fn(ctx, params, batch_stats, inp: common.StepInput):
    hp: Hparams = ctx.hp
    q, k, new_stats, new_target_stats = mocov2.query_and_key(ctx, params, batch_stats, inp)
    queue = inp.buffers["queue"]
    outer, widest = ring.outer_fraction(ctx, inp), ring.max_outer(hp)
    loss, top, mask = losses.moco_ring_with_logits(
        q, k, queue, hp.temperature, outer, hp.ring_inner, widest
    )
    cos = jax.lax.stop_gradient(top) * hp.temperature  # [B, M] descending
    count = jnp.maximum(jnp.sum(mask, axis=1), 1)
    lowest = jnp.min(jnp.where(mask, cos, jnp.inf), axis=1)
    highest = jnp.max(jnp.where(mask, cos, -jnp.inf), axis=1)
    neg_sim = jnp.mean(jnp.sum(jnp.where(mask, cos, 0.0), axis=1) / count)
    metrics = {
        "pos_sim": jnp.mean(jnp.sum(q * k, axis=-1)),
        **ring.metrics(outer, jnp.stack([lowest, highest], axis=1), neg_sim),
    }
    return loss, common.StepOutput(
        metrics=metrics,
        batch_stats=new_stats,
        target_batch_stats=new_target_stats,
        updates={"keys": jax.lax.stop_gradient(k), "loss": jax.lax.stop_gradient(loss)},
    )
