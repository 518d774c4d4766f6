"""CMCRing: CMC (`cmc.py`) with Ring/CNCE negatives (Wu et al., ICLR 2021). No code exists anywhere
(no commit of mhw32/contrastive-ring-public has one: `src/objectives/` holds `instdisc.py`, `moco.py`,
`memory.py` and, in the first commit, `simclr.py`): ours applies the code's `NCERing` selection
(`src/objectives/instdisc.py` L117) to each cross-view memory bank. The banks start as CMC's
(`cmc.init_bank`).

```
f1, f2 = normalize(head1(enc1(L))), normalize(head2(enc2(ab)))       # CMC's two views of one crop
ring_1 = descending positions int(inner·int(outer·N)) … int(outer·N) − 1 of f1·bank2ᵀ  (L vs ab bank)
ring_2 = the same for f2·bank1ᵀ                                       (ab vs L bank)
neg_v  = K draws uniform WITH replacement from ring_v
L_v    = −mean(f_v·bank_other[idx]/τ − logsumexp([f_v·bank_other[idx], f_v·bank_other[neg_v]]/τ))
loss   = L_1 + L_2;  bank_v[idx] = normalize(0.5·bank_v[idx] + 0.5·f_v)   # CMC's momentum write
```
Each term is IRing's loss (`ir.bank_loss`: the softmax form of NCERing) against the other view's bank,
so the partition constant Z of CMC's NCE loss (which assumes uniform noise) is not used: `loss` must
be 'softmax'. The rings are found on the sharded banks by exact ranks (`sampling.ring_negatives`),
the outer fraction follows `method_config.anneal` (`ring.py`), `ring_inner = 0` is the ball lesion.
Logs `loss1`, `loss2`, `train/ring_outer`, `ring_lo` / `ring_hi` (both directions' mean) and
`neg_sim`.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ssl_jax.config_checks import ConfigError, hp_field
from ssl_jax.methods import cmc, common, ir, losses, ring
from ssl_jax.methods.cmc import EMA_BEFORE_KEYS, USES_TARGET  # noqa: F401  (interface)
from ssl_jax.methods.negatives import sampling

build_model = cmc.build_model
# CMC's checks and banks (its momentum writes of both after the loss), then the ring's
_check_cmc_ring, buffer_specs, init_buffers, update_buffers = ring.compose(
    cmc, "bank_size", "memory bank"
)


@dataclasses.dataclass(frozen=True)
class Hparams(ring.RingHparams, cmc.Hparams):
    """CMC's (τ 0.07, bank momentum 0.5) with the Ring code's k − 1 = 4095 ring draws per
    direction, the softmax loss, and the ring's outer / inner fractions and annealing."""

    num_negatives: int = hp_field(4095, low=1)
    loss: str = hp_field("softmax", choices=cmc.LOSSES)


def check_config(ctx: common.StepContext) -> None:
    _check_cmc_ring(ctx)
    if ctx.hp.loss != "softmax":
        raise ConfigError(
            f"config.method_config.loss={ctx.hp.loss!r}: CMC's NCE loss estimates its partition "
            "constant for uniform noise, which ring negatives are not; allowed: 'softmax'"
        )


def loss_fn(ctx, params, batch_stats, inp: common.StepInput):
    hp: Hparams = ctx.hp
    out, new_stats = common.online_forward(ctx, params, batch_stats, inp.views[0])
    f1 = losses.l2_normalize(out["projection1"])
    f2 = losses.l2_normalize(out["projection2"])
    outer = ring.outer_fraction(ctx, inp)
    index = inp.batch["index"]
    results = []
    # L against the ab bank, ab against the L bank (CMC's out_l, out_ab)
    for rng, f, bank in zip(
        jax.random.split(inp.rng), (f1, f2), (inp.buffers["bank2"], inp.buffers["bank1"])
    ):
        negatives, bounds = sampling.ring_negatives(
            rng, bank, jax.lax.stop_gradient(f), outer, hp.ring_inner, hp.num_negatives, ctx.mesh
        )
        results.append((*ir.bank_loss(ctx, f, index, negatives, bank), bounds, negatives))
    (loss1, sims1, bounds1, neg1), (loss2, sims2, bounds2, neg2) = results
    loss = loss1 + loss2
    sims = jnp.stack([sims1, sims2])
    metrics = {
        "loss1": loss1,
        "loss2": loss2,
        "pos_sim": jnp.mean(sims[:, :, 0]),
        **ring.metrics(outer, 0.5 * (bounds1 + bounds2), jnp.mean(sims[:, :, 1:])),
    }
    updates = jax.lax.stop_gradient(
        {"embeddings1": f1, "embeddings2": f2, "z": inp.buffers["z"], "loss": loss}
    )
    updates["negatives"] = (neg1, neg2)  # the drawn rows (tests; not written anywhere)
    return loss, common.StepOutput(metrics=metrics, batch_stats=new_stats, updates=updates)
