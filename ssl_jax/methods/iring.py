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
and the `[B, N]` similarities are never gathered (the tests compare it with the gathered form,
`iring_nce` in tests/methods/references.py).
The outer fraction follows `method_config.anneal` (`methods/ring.py`; the released configs do not
anneal, the paper's runs anneal linearly). `ring_inner = 0` is the ball lesion (the intended NCEBall).
Logs `train/ring_outer`, `train/ring_lo`, `train/ring_hi` (the ring's similarity bounds) and
`train/neg_sim` (mean similarity of the drawn negatives).
"""

from __future__ import annotations

import dataclasses

import jax

from ssl_jax.methods import common, ir, losses, ring
from ssl_jax.methods.ir import EMA_BEFORE_KEYS, USES_TARGET  # noqa: F401  (interface)
from ssl_jax.methods.negatives import sampling

# IR's checks and bank (its write after the loss), then the ring's
check_config, buffer_specs, init_buffers, update_buffers = ring.compose(
    ir, "bank_size", "memory bank"
)


@dataclasses.dataclass(frozen=True)
class Hparams(ring.RingHparams, ir.Hparams):
    """IR's (`num_negatives` = the code's k − 1 ring draws) plus the ring's."""


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
