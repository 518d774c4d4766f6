"""SCE (Denize et al., WACV 2023) and the machinery it shares with its relational baseline ReSSL.

Official code: CEA-LIST/SCE `sce/models/siamese/{sce.py, shuffle_momentum_queue_base.py}` (and its
successor eztorch). One momentum (target) network updated AFTER the optimiser step, a queue of
target embeddings, and a loss between online embeddings `q` of some views and target embeddings `k`
of others: `losses.sce` (Eq. 8, official form), `losses.sce_eq9` (Eq. 9 with free λ, μ, η) or
`losses.ressl` (`methods/ressl.py`, same module machinery with its own Hparams).

Views (`config.data.views`, one recipe per view; views may have different sizes):
- asymmetric (`symmetric=False`, the CIFAR-10 config and the ImageNet100 ablation): view 0 is the
  *weak* view, seen only by the target; views 1.. (the *strong* view, plus any local crops) only by
  the online network: `L = mean_j ℓ(q_j, k_0)`, j ≥ 1. The queue receives `k_0` (B keys per step).
- symmetric (`symmetric=True`, the ImageNet configs): views `0..G-1` (`G = num_global_crops`, 2)
  are the global crops, the rest local crops (multi-crop). Online features for every view, target
  features for the global ones only, and, as the official `training_step`,
  `L = 1/(G·(V−1)) · Σ_{i<G} Σ_{j≠i} ℓ(q_j, k_i)` (2 crops: `(ℓ(q_1,k_0) + ℓ(q_0,k_1))/2`).
  The queue receives `concat(k_0, …, k_{G−1})` once, after the loss (G·B keys per step).

The online branch uses the predictor output when the model has one
(`config.model.predictor.enabled`), the target branch never does. Every view is forwarded on its
own (as the official code), so BN statistics are per view; the running statistics are threaded
through the forwards in order (PyTorch updates them once per forward).

BN (`common.QueryKeyBN`, group sizes in images). ImageNet (official `sync_batchnorm: True`,
`shuffle_bn: False`): SyncBN in both networks, the defaults here. CIFAR-10 (one GPU,
`simulate_n_devices: 8`): the official `convert_to_split_batchnorm` replaces the momentum trunk's
`BatchNorm2d` by `SplitBatchNorm2D(8)`; the projector's BatchNorm1d and the online network see the
whole batch of 256 — `key_bn_group_size=32`, `bn_group_scope='backbone'`, `shuffle_bn=True`. With
shuffle-BN each key view's target forward gets its own permutation (`fold_in(rng, i)`), un-permuted
after, as the official code per crop. (The official SplitBN groups are interleaved, sample i in group
i mod 8; ours are contiguous: after the random permutation both are a uniformly random partition.)

EMA: `EMA_BEFORE_KEYS = False` (official `on_train_batch_end`); the momentum schedule (constant or
cosine to 1) is `config.ema`.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ssl_jax.config_checks import ConfigError, hp_field
from ssl_jax.methods import common, losses

# MoCo's queue; `update_buffers` enqueues the keys of every target view once per step, after the loss
from ssl_jax.methods.mocov2 import (  # noqa: F401  (the method interface)
    buffer_metrics,
    buffer_specs,
    init_buffers,
    update_buffers,
)

EMA_BEFORE_KEYS = False  # SCE: EMA in on_train_batch_end, after the optimiser step
USES_TARGET = True

LOSS_FORMS = ("sce", "eq9")


@dataclasses.dataclass(frozen=True)
class Hparams(common.QueryKeyBN):
    """SCE hyper-parameters (defaults: the paper's ImageNet values, λ 0.5, τ 0.1, τ_m 0.07).

    loss_form: 'sce' = `losses.sce` (official code; Eq. 8); 'eq9' = `losses.sce_eq9` with
      λ = `coeff`, μ = `mu`, η = `eta` (μ = η = 1 − λ gives 'sce' back; Tab. 3 ablation: η = 0).
    mask_self: the paper's indicator `1_{i≠k}` on the target's self slot instead of the code's zero
      logit (either loss form).
    """

    temperature: float = hp_field(0.1, low=0.0, low_open=True)
    temperature_m: float = hp_field(0.07, low=0.0, low_open=True)
    coeff: float = hp_field(0.5, low=0.0, high=1.0)
    loss_form: str = hp_field("sce", choices=LOSS_FORMS)
    mu: float = 0.5
    eta: float = 0.5
    mask_self: bool = False
    queue_size: int = hp_field(65536, low=1)
    symmetric: bool = False
    num_global_crops: int = hp_field(2, low=1)

    def pair_loss(self, query, key, queue):
        """ℓ(q, k) of one (online view, target view) pair."""
        shared = (query, key, queue, self.temperature, self.temperature_m, self.coeff)
        if self.loss_form == "eq9":
            return losses.sce_eq9(*shared, self.mu, self.eta, mask_self=self.mask_self)
        return losses.sce(*shared, mask_self=self.mask_self)


# --------------------------------------------------------------------------------------------------
# Shared with ressl.py: everything below reads only the fields both Hparams have and `pair_loss`.
# --------------------------------------------------------------------------------------------------


def key_views(hp) -> tuple[int, ...]:
    """Indices of the views the target network sees."""
    return tuple(range(hp.num_global_crops)) if hp.symmetric else (0,)


def online_views(hp, num_views: int) -> tuple[int, ...]:
    """Indices of the views the online network sees."""
    return tuple(range(num_views)) if hp.symmetric else tuple(range(1, num_views))


def pairs(hp, num_views: int) -> tuple[tuple[int, int], ...]:
    """(online view j, target view i) pairs the loss averages over (official `training_step`)."""
    return tuple((j, i) for i in key_views(hp) for j in online_views(hp, num_views) if j != i)


def keys_per_step(hp, global_batch_size: int) -> int:
    return len(key_views(hp)) * global_batch_size


def check_config(ctx: common.StepContext) -> None:
    hp = ctx.hp
    config = ctx.config
    num_views = len(config.data.views)
    if num_views < 2:
        raise ConfigError(
            f"config.data.views={tuple(config.data.views)} has {num_views} view(s); "
            f"method {config.method!r} needs at least 2 (target view(s) first, then online views)"
        )
    if hp.symmetric and not 1 <= hp.num_global_crops <= num_views:
        raise ConfigError(
            f"config.method_config.num_global_crops={hp.num_global_crops} must be in "
            f"[1, {num_views}] (the number of views) with symmetric=True"
        )
    common.require_divisible(
        "config.method_config.queue_size",
        hp.queue_size,
        keys_per_step(hp, config.global_batch_size),
        "the keys enqueued per step (number of target views × config.global_batch_size)",
    )
    common.require_divisible(
        "config.method_config.queue_size", hp.queue_size, ctx.num_devices, "the device count"
    )
    common.check_bn_config(ctx, key_batch=config.global_batch_size)
    predictor = config.model.get("predictor", None)
    if predictor is not None and predictor.get("enabled", True):
        if predictor.out_dim != config.model.projector.out_dim:
            raise ConfigError(
                f"config.model.predictor.out_dim={predictor.out_dim} must equal "
                f"config.model.projector.out_dim={config.model.projector.out_dim}: "
                "online predictions are compared with target projections and the queue"
            )


def online_embedding(out: dict) -> jnp.ndarray:
    """The online branch's output: the predictor's when the model has one, else the projection."""
    return losses.l2_normalize(out["prediction"] if "prediction" in out else out["projection"])


def target_keys(ctx, target: dict, views, rng) -> tuple[dict, dict]:
    """L2-normalised target projections `{i: [B, d]}` of the key views, and new target BN stats.

    One forward per key view (own shuffle permutation when shuffle-BN is on), the running statistics
    threaded from one forward to the next."""
    hp = ctx.hp
    stats = target["batch_stats"]
    keys = {}
    for i in key_views(hp):
        out, stats = common.target_forward(
            ctx,
            {"params": target["params"], "batch_stats": stats},
            views[i],
            jax.random.fold_in(rng, i),
        )
        keys[i] = losses.l2_normalize(out["projection"])
    return keys, stats


def loss_fn(ctx, params, batch_stats, inp: common.StepInput):
    hp = ctx.hp
    views = inp.views
    queue = inp.buffers["queue"]
    keys, new_target_stats = target_keys(ctx, inp.target, views, inp.rng)
    queries, stats = {}, batch_stats
    for j in online_views(hp, len(views)):
        out, stats = common.online_forward(ctx, params, stats, views[j])
        queries[j] = online_embedding(out)
    pair_list = pairs(hp, len(views))
    loss = sum(hp.pair_loss(queries[j], keys[i], queue) for j, i in pair_list) / len(pair_list)
    q0 = queries[pair_list[0][0]]
    metrics = {
        "pos_sim": sum(jnp.mean(jnp.sum(queries[j] * keys[i], axis=-1)) for j, i in pair_list)
        / len(pair_list),
        "neg_sim": jnp.mean(q0 @ jax.lax.stop_gradient(queue).T),
        "key_queue_sim": jnp.mean(keys[key_views(hp)[0]] @ jax.lax.stop_gradient(queue).T),
    }
    all_keys = jnp.concatenate([keys[i] for i in key_views(hp)], axis=0)
    return loss, common.StepOutput(
        metrics=metrics,
        batch_stats=stats,
        target_batch_stats=new_target_stats,
        updates={"keys": jax.lax.stop_gradient(all_keys)},
    )
