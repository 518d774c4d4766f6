"""What the Ring methods (CNCE, Wu et al. ICLR 2021: `iring`, `mocoring`, and `cmcring`, which applies
the same selection to each cross-view bank) share: the ring's hyper-parameters, the outer fraction of
the current step (annealing), its state for the adaptive schedule, the logged ring metrics, and
`compose`, which gives a variant its base method's checks and buffers followed by the ring's.

The code's names (mhw32/contrastive-ring-public): `thres_outer` = `ring_outer`, `thres_inner` =
`ring_inner` (the paper's percentiles: `ring_percentiles` in tests/methods/references.py). The outer fraction is a pure
function of the global step (`sampling.ring_outer_schedule`) except for 'adaptive_loss', whose state
(the current fraction and the loss window) lives in the buffers under 'ring', so a checkpoint holds it
and resume is exact. 'adaptive_knn' (the code's `adaptive_anneal_on_acc`: ±0.05 on a window of 5
validation kNN accuracies) needs an accuracy the train step does not have: refused at config check.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from ssl_jax.config_checks import ConfigError, hp_field
from ssl_jax.methods import common
from ssl_jax.methods.negatives import sampling


@dataclasses.dataclass(frozen=True)
class RingHparams:
    """The ring and its annealing (defaults: the code's, `config/pretrain/*/*.json` and
    `systems.py`): outer 0.1, inner 0.1, no annealing; when annealed the outer fraction goes from
    `anneal_init` 1.0 to `anneal_final` 0.1 over `max_anneal_epochs` 100."""

    ring_outer: float = hp_field(0.1, low=0.0, high=1.0, low_open=True)
    ring_inner: float = hp_field(0.1, low=0.0, high=1.0, high_open=True)  # 0: the ball lesion
    anneal: str = hp_field("constant", choices=sampling.ANNEAL_SCHEDULES)
    max_anneal_epochs: float = hp_field(100.0, low=0.0, low_open=True)
    anneal_init: float = hp_field(1.0, low=0.0, high=1.0, low_open=True)
    anneal_final: float = hp_field(0.1, low=0.0, high=1.0, low_open=True)
    adaptive_window: int = hp_field(10, low=1)  # adaptive_loss: the code's window 10
    adaptive_delta: float = hp_field(0.01, low=0.0)  # and its ±0.01


def max_outer(hp: RingHparams) -> float:
    """The largest outer fraction the run can reach (MoCoRing's static top-k width)."""
    if hp.anneal == "constant":
        return hp.ring_outer
    if hp.anneal.startswith("adaptive"):
        return 1.0  # the code's max_thres
    return max(hp.anneal_init, hp.anneal_final)


def compose(base, num_rows: str, what: str) -> tuple:
    """The Ring variant of method module `base` → its `(check_config, buffer_specs, init_buffers,
    update_buffers)`: `base`'s, each followed by the ring's.

    check_config: the ring is non-empty at every outer fraction the run reaches (int(outer·N) ≥ 1
    over the N = `ctx.hp.<num_rows>` rows of `base`'s bank or queue, named `what` in the error);
    'adaptive_knn' is refused. Buffers: with 'adaptive_loss' the schedule's state under 'ring'
    (replicated), updated after `base`'s writes with this step's loss (`updates['loss']`,
    `AdaptiveThresholdPolicy.record(loss.item())`); the other schedules add nothing.
    """

    def check_config(ctx: common.StepContext) -> None:
        base.check_config(ctx)
        check_ring(ctx, getattr(ctx.hp, num_rows), what)

    def buffer_specs(ctx: common.StepContext) -> dict:
        specs = dict(base.buffer_specs(ctx))
        if ctx.hp.anneal == "adaptive_loss":
            specs["ring"] = P()
        return specs

    def init_buffers(rng, ctx: common.StepContext) -> dict:
        hp: RingHparams = ctx.hp
        buffers = dict(base.init_buffers(rng, ctx))
        if hp.anneal == "adaptive_loss":
            buffers["ring"] = sampling.adaptive_outer_init(hp.anneal_init, hp.adaptive_window)
        return buffers

    def update_buffers(ctx: common.StepContext, inp: common.StepInput, updates: dict) -> dict:
        hp: RingHparams = ctx.hp
        buffers = dict(base.update_buffers(ctx, inp, updates))
        if hp.anneal == "adaptive_loss":
            buffers["ring"] = sampling.adaptive_outer_update(
                inp.buffers["ring"],
                updates["loss"],
                delta=hp.adaptive_delta,
                lower_is_better=True,
                low=min(hp.anneal_init, hp.anneal_final),
                high=max(hp.anneal_init, hp.anneal_final),
            )
        return buffers

    return check_config, buffer_specs, init_buffers, update_buffers


def check_ring(ctx: common.StepContext, num_rows: int, what: str) -> None:
    """The ring is non-empty at every outer fraction the run reaches (int(outer·N) ≥ 1 over the
    `num_rows` rows of the bank/queue); 'adaptive_knn' is refused."""
    hp: RingHparams = ctx.hp
    if hp.anneal == "adaptive_knn":
        raise NotImplementedError(
            "config.method_config.anneal='adaptive_knn' (the code's adaptive_anneal_on_acc) needs a "
            "validation kNN accuracy inside the train step, which ssl_jax does not compute there; "
            f"allowed: {[a for a in sampling.ANNEAL_SCHEDULES if a != 'adaptive_knn']}"
        )
    smallest = hp.ring_outer if hp.anneal == "constant" else min(hp.anneal_init, hp.anneal_final)
    if int(smallest * num_rows) < 1:
        raise ConfigError(
            f"config.method_config: an outer fraction of {smallest} keeps int({smallest}·{num_rows}) "
            f"= 0 rows of the {what}: the ring is empty; allowed: outer fractions ≥ {1 / num_rows}"
        )


def outer_fraction(ctx: common.StepContext, inp: common.StepInput):
    """The outer fraction of this step: a Python float for 'constant' (static positions, as the
    code's float64 arithmetic), else a float32 scalar of the step (or the adaptive state)."""
    hp: RingHparams = ctx.hp
    if hp.anneal == "constant":
        return hp.ring_outer
    if hp.anneal == "adaptive_loss":
        return inp.buffers["ring"]["outer"]
    return sampling.ring_outer_schedule(
        hp.anneal,
        inp.step,
        outer=hp.ring_outer,
        anneal_steps=int(hp.max_anneal_epochs * ctx.steps_per_epoch),
        init=hp.anneal_init,
        final=hp.anneal_final,
    )


def metrics(outer, bounds, negative_sim) -> dict:
    """`ring_outer`, the ring's similarity bounds `ring_lo`/`ring_hi` (cosines, `bounds` `[B, 2]`
    lowest/highest, mean over anchors) and `neg_sim`, the mean cosine of the negatives used."""
    return {
        "ring_outer": jnp.asarray(outer, jnp.float32),
        "ring_lo": jnp.mean(bounds[:, 0]),
        "ring_hi": jnp.mean(bounds[:, 1]),
        "neg_sim": negative_sim,
    }
