"""IRing (CNCE with a memory bank; Wu et al., "Conditional Negative Sampling for Contrastive Learning
of Visual Representations", ICLR 2021; the code's `NCERing`, `src/objectives/instdisc.py`).

IR (`ir.py`: bank of one normalised embedding per example, own stale entry as the positive, bank
write after the loss) with the negatives drawn from a ring of each query's similarities to the bank:
```
pos  = q·bank[idx]/τ
ring = descending positions int(inner·int(outer·N)) … int(outer·N) − 1 of q·bankᵀ (own entry included)
neg  = k − 1 draws uniform WITH replacement from the ring       # k − 1 = 4095 in the code
L    = −mean(pos − logsumexp([pos, neg]))                        # losses.ir_nce on the similarities
```
The ring is found on the sharded bank by exact ranks and counts (`sampling.ring_negatives`): the bank
and the `[B, N]` similarities are never gathered. `losses.iring_nce` is the gathered reference form.
The outer fraction follows `method_config.anneal` (`methods/ring.py`; the released configs do not
anneal, the paper's runs anneal linearly). `ring_inner = 0` is the ball lesion (the intended NCEBall).
Logs `train/ring_outer`, `train/ring_lo`, `train/ring_hi` (the ring's similarity bounds) and
`train/neg_sim` (mean similarity of the drawn negatives).
"""

from __future__ import annotations

import dataclasses

import jax

from ssl_jax import losses, sampling
from ssl_jax.methods import common, ir, ring

EMA_BEFORE_KEYS = ir.EMA_BEFORE_KEYS
USES_TARGET = ir.USES_TARGET

build_model = common.build_model
prepare_buffers = common.prepare_buffers
buffer_metrics = common.no_buffer_metrics


@dataclasses.dataclass(frozen=True)
class Hparams(ring.RingHparams, ir.Hparams):
    """IR's (`num_negatives` = the code's k − 1 ring draws) plus the ring's."""


def check_config(ctx: common.StepContext) -> None:
    ir.check_config(ctx)
    ring.check_config(ctx, ctx.hp.bank_size, "memory bank")


def buffer_specs(ctx: common.StepContext) -> dict:
    return {**ir.buffer_specs(ctx), **ring.buffer_specs(ctx.hp)}


def init_buffers(rng, ctx: common.StepContext) -> dict:
    return {**ir.init_buffers(rng, ctx), **ring.init_buffers(ctx.hp)}


def loss_fn(ctx, params, batch_stats, inp: common.StepInput):
    hp: Hparams = ctx.hp
    out, new_stats = common.online_forward(ctx, params, batch_stats, inp.views[0])
    q = losses.l2_normalize(out["projection"])
    bank = inp.buffers["bank"]
    outer = ring.outer_fraction(ctx, inp)
    negatives, bounds = sampling.ring_negatives(
        inp.rng, bank, jax.lax.stop_gradient(q), outer, hp.ring_inner, hp.num_negatives, ctx.mesh
    )
    loss, sims = ir.bank_loss(ctx, q, inp.batch["index"], negatives, bank)
    metrics = {"pos_sim": sims[:, 0].mean(), **ring.metrics(outer, bounds, sims[:, 1:].mean())}
    return loss, common.StepOutput(
        metrics=metrics,
        batch_stats=new_stats,
        updates={
            "embeddings": jax.lax.stop_gradient(q),
            "loss": jax.lax.stop_gradient(loss),
            "negatives": negatives,  # the drawn rows (tests; not written anywhere)
        },
    )


def update_buffers(ctx, inp: common.StepInput, updates: dict) -> dict:
    """IR's bank write, then the adaptive schedule's state (if any)."""
    return {
        **ir.update_buffers(ctx, inp, updates),
        **ring.update_buffers(ctx, inp, updates["loss"]),
    }
