"""MoCoRing (CNCE with a MoCo queue; Wu et al., ICLR 2021; the code's `MoCoRing`,
`src/objectives/moco.py`).

MoCo v2 (`mocov2.py`: EMA key encoder updated before the keys, queue written after the loss) with
the negatives restricted to a ring of each query's similarities to the queue, ALL of them used:
```
pos  = q·k/τ
ring = sort_desc(q·queueᵀ/τ)[:, int(inner·int(outer·K)) : int(outer·K)]   # 5,898 for K = 65,536
L    = −mean(pos − logsumexp([pos, ring]))                                # losses.moco_ring
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

from ssl_jax import losses
from ssl_jax.config_checks import hp_field
from ssl_jax.methods import common, mocov2, ring

EMA_BEFORE_KEYS = mocov2.EMA_BEFORE_KEYS
USES_TARGET = mocov2.USES_TARGET

build_model = common.build_model
prepare_buffers = common.prepare_buffers
buffer_metrics = common.queue_metrics


@dataclasses.dataclass(frozen=True)
class Hparams(ring.RingHparams, mocov2.Hparams):
    """MoCo v2's plus the ring's; τ 0.07 and K 65,536 as the code's MoCoRing configs."""

    temperature: float = hp_field(0.07, low=0.0, low_open=True)


def check_config(ctx: common.StepContext) -> None:
    mocov2.check_config(ctx)
    ring.check_config(ctx, ctx.hp.queue_size, "queue")


def buffer_specs(ctx: common.StepContext) -> dict:
    return {**mocov2.buffer_specs(ctx), **ring.buffer_specs(ctx.hp)}


def init_buffers(rng, ctx: common.StepContext) -> dict:
    return {**mocov2.init_buffers(rng, ctx), **ring.init_buffers(ctx.hp)}


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


def update_buffers(ctx, inp: common.StepInput, updates: dict) -> dict:
    """MoCo's enqueue, then the adaptive schedule's state (if any)."""
    return {
        **mocov2.update_buffers(ctx, inp, updates),
        **ring.update_buffers(ctx, inp, updates["loss"]),
    }
