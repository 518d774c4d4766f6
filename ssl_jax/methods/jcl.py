"""JCL, Joint Contrastive Learning (Cai et al., NeurIPS 2020): MoCo v2 with M' positive keys.

Official `MoCoUnlimitedKeysDefault` + `main_moco.py`, paper Eq. 8 and Algorithm 1. Per step:

* `config.data.views` has M' + 1 entries from one recipe: view 0 is the query, views 1..M' the keys;
* the EMA key encoder is updated first (m 0.999, `EMA_BEFORE_KEYS`), then all M'·B key crops go
  through it in ONE forward, concatenated crop-major (row `j·B + i` = key crop j of sample i, as the
  official `torch.cat(im_k)`), with shuffle-BN over all of them (`common.target_forward`; BN
  groups of `key_bn_group_size` = M'·32 images, as each official GPU's BN after the shuffle);
* each key is L2-normalised, μ = mean of the M' normalised keys (NOT re-normalised, norm < 1) and
  `losses.jcl(q, keys, queue, τ, λ_t)` adds `λ_t/(2τ²)·qᵀΣq` inside the log-sum-exp;
* μ is what the queue receives.

λ schedule (`lam_schedule`): 'linear_epoch' (official code, the default) `λ_t = λ·(e + 1)/E` with
the 0-based epoch `e = step // steps_per_epoch` and `E = ceil(total_steps / steps_per_epoch)`
epochs, constant within an epoch; 'constant' `λ_t = λ`. The step that feeds it is the engine's
(`StepInput.step`, the state's step counter), so resume is exact.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

from ssl_jax.config_checks import ConfigError, hp_field
from ssl_jax.methods import common, losses

# MoCo v2's queue: init normalize(randn) as the official code (only real entries are un-normalised
# means); memory.enqueue writes the rows as given: μ keeps its norm < 1, as the official queue.
from ssl_jax.methods.mocov2 import (  # noqa: F401  (the method interface)
    buffer_metrics,
    buffer_specs,
    init_buffers,
    update_buffers,
)

EMA_BEFORE_KEYS = True  # as MoCo: momentum update, then the keys
USES_TARGET = True

LAM_SCHEDULES = ("linear_epoch", "constant")


@dataclasses.dataclass(frozen=True)
class Hparams(common.QueryKeyBN):
    temperature: float = hp_field(0.2, low=0.0, low_open=True)
    queue_size: int = hp_field(65536, low=1)
    num_keys: int = hp_field(4, low=1)  # M' (official k_crops = 5 → 4 keys; paper Sec. 4.1 uses 5)
    lam: float = hp_field(2.0, low=0.0)  # λ (official script 2.0; paper Sec. 4.1 4.0)
    lam_schedule: str = hp_field(
        "linear_epoch", choices=LAM_SCHEDULES
    )  # 'linear_epoch' (code: λ·(epoch+1)/epochs) | 'constant'
    # official DDP (8 GPUs × 32 queries, no SyncBN): each GPU's BN sees its 32 queries and, after
    # the shuffle of all M'·B key crops, M'·32 = 4×32 = 128 keys (caiqi/Joint-Contrastive-Learning
    # `main_moco.py` L340 `torch.cat(images[1:])`, `moco/moco_unlimit_key_default.py` L132)
    query_bn_group_size: int = hp_field(32, low=0)
    key_bn_group_size: int = hp_field(128, low=0)
    shuffle_bn: bool = True


def num_epochs(ctx: common.StepContext) -> int:
    """E of the λ ramp: the epochs the schedule spans (a last partial epoch counts)."""
    return max(1, math.ceil(ctx.total_steps / ctx.steps_per_epoch))


def lam_at(ctx: common.StepContext, step) -> jax.Array:
    """λ_t at a (traced or concrete) step: `λ·(step // steps_per_epoch + 1)/E`, or λ if constant."""
    hp: Hparams = ctx.hp
    if hp.lam_schedule == "constant":
        return jnp.asarray(hp.lam, jnp.float32)
    epochs = num_epochs(ctx)
    epoch = jnp.minimum(jnp.asarray(step, jnp.int32) // ctx.steps_per_epoch, epochs - 1)
    return hp.lam * (epoch + 1).astype(jnp.float32) / epochs


def check_config(ctx: common.StepContext) -> None:
    hp: Hparams = ctx.hp
    if len(ctx.config.data.views) != hp.num_keys + 1:
        raise ConfigError(
            f"config.data.views={tuple(ctx.config.data.views)} has "
            f"{len(ctx.config.data.views)} views; JCL with num_keys={hp.num_keys} "
            f"needs num_keys + 1 = {hp.num_keys + 1} (the query and M' keys). "
            "The jcl_* configs build them from M': pass it as `--config=FILE:keys=M'`"
        )
    key_views = set(ctx.config.data.views[1:])
    if len(key_views) > 1:
        raise ConfigError(
            f"config.data.views={tuple(ctx.config.data.views)}: "
            f"the {hp.num_keys} key views must name one recipe (they go through the "
            f"key encoder as one batch); got {sorted(key_views)}"
        )
    # one μ per image is enqueued: the queue holds a whole number of global batches (as MoCo)
    common.require_divisible(
        "config.method_config.queue_size",
        hp.queue_size,
        ctx.config.global_batch_size,
        "the global batch of mean keys (config.global_batch_size)",
    )
    common.require_divisible(
        "config.method_config.queue_size", hp.queue_size, ctx.num_devices, "the device count"
    )
    common.check_bn_config(ctx, key_batch=hp.num_keys * ctx.config.global_batch_size)


def key_embeddings(ctx: common.StepContext, target: dict, key_views, rng):
    """The M' key crops through the EMA encoder in one forward (shuffle-BN over all M'·B of them).

    Returns (keys `[M', B, D]` L2-normalised, crop-major; new target batch_stats).
    """
    num_keys, batch = len(key_views), key_views[0].shape[0]
    x = jnp.concatenate(key_views, axis=0)  # row j*B + i = key crop j of sample i
    out_k, new_target_stats = common.target_forward(ctx, target, x, rng)
    k = out_k["projection"].reshape(num_keys, batch, -1)
    return losses.l2_normalize(k), new_target_stats


def loss_fn(ctx, params, batch_stats, inp: common.StepInput):
    hp: Hparams = ctx.hp
    out_q, new_stats = common.online_forward(ctx, params, batch_stats, inp.views[0])
    q = losses.l2_normalize(out_q["projection"])
    keys, new_target_stats = key_embeddings(ctx, inp.target, inp.views[1:], inp.rng)
    mean_key = jnp.mean(keys.astype(jnp.float32), axis=0)  # μ, not re-normalised
    queue = inp.buffers["queue"]
    lam = lam_at(ctx, inp.step)
    loss = losses.jcl(q, keys, queue, hp.temperature, lam)
    qf = jax.lax.stop_gradient(q).astype(jnp.float32)
    centred = jnp.einsum("mbd,bd->mb", keys - mean_key[None], qf)
    metrics = {
        "pos_sim": jnp.mean(jnp.einsum("mbd,bd->mb", keys, qf)),  # mean q·k_m, comparable to MoCo's
        "neg_sim": jnp.mean(q @ jax.lax.stop_gradient(queue).T),
        "lambda": lam,
        "mean_key_norm": jnp.mean(jnp.linalg.norm(mean_key, axis=-1)),
        "q_sigma_q": jnp.mean(jnp.square(centred)),  # qᵀΣq, the spread of the keys along q
    }
    return loss, common.StepOutput(
        metrics=metrics,
        batch_stats=new_stats,
        target_batch_stats=new_target_stats,
        updates={"keys": jax.lax.stop_gradient(mean_key)},
    )
