"""MoCo v2 (Chen et al. 2020): EMA key encoder updated before the keys, queue of negatives, shuffle-BN.

Loss: InfoNCE over [q·k, q·queueᵀ]/τ with label 0 (`losses.info_nce`); the queue receives the
all-gathered keys after the loss.

BN (official `main_moco.py`: DDP on 8 GPUs × 32 images, no SyncBN; `_batch_shuffle_ddp` gathers the
keys, permutes them across GPUs and un-permutes after): `query_bn_group_size = key_bn_group_size = 32`
and `shuffle_bn=True` are the defaults, counted in images so a run gives the same result on any
number of devices (`common.QueryKeyBN`).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from ssl_jax.config_checks import hp_field
from ssl_jax.methods import common, losses, memory

EMA_BEFORE_KEYS = True  # MoCo: momentum update, then keys
USES_TARGET = True

buffer_metrics = common.queue_metrics


@dataclasses.dataclass(frozen=True)
class Hparams(common.QueryKeyBN):
    temperature: float = hp_field(0.2, low=0.0, low_open=True)
    queue_size: int = hp_field(65536, low=1)
    query_bn_group_size: int = hp_field(32, low=0)  # official: 256 over 8 GPUs, per-GPU BN
    key_bn_group_size: int = hp_field(32, low=0)
    shuffle_bn: bool = True


def check_config(ctx: common.StepContext, num_views: int = 2) -> None:
    common.require_views(ctx, num_views)
    common.require_divisible(
        "config.method_config.queue_size",
        ctx.hp.queue_size,
        ctx.config.global_batch_size,
        "the global key batch (config.global_batch_size)",
    )
    common.require_divisible(
        "config.method_config.queue_size", ctx.hp.queue_size, ctx.num_devices, "the device count"
    )
    common.check_bn_config(ctx, key_batch=ctx.config.global_batch_size)


def buffer_specs(ctx: common.StepContext) -> dict:
    return {"queue": memory.ROWS, "queue_ptr": P()}


def init_buffers(rng, ctx: common.StepContext) -> dict:
    return {
        "queue": memory.random_rows(rng, ctx.hp.queue_size, ctx.embed_dim),
        "queue_ptr": jnp.zeros((), jnp.int32),
    }


def query_and_key(ctx, params, batch_stats, inp: common.StepInput):
    """MoCo's two forwards → (q, k, online BN stats, target BN stats): q `[B, D]` normalised from
    the online network on view 0, k from the (already EMA'd) target on view 1 with shuffle-BN."""
    out_q, new_stats = common.online_forward(ctx, params, batch_stats, inp.views[0])
    q = losses.l2_normalize(out_q["projection"])
    out_k, new_target_stats = common.target_forward(ctx, inp.target, inp.views[1], inp.rng)
    k = losses.l2_normalize(out_k["projection"])
    return q, k, new_stats, new_target_stats


def loss_fn(ctx, params, batch_stats, inp: common.StepInput):
    hp: Hparams = ctx.hp
    q, k, new_stats, new_target_stats = query_and_key(ctx, params, batch_stats, inp)
    queue = inp.buffers["queue"]
    loss = losses.info_nce(q, k, queue, hp.temperature)
    metrics = {
        "pos_sim": jnp.mean(jnp.sum(q * k, axis=-1)),
        "neg_sim": jnp.mean(q @ jax.lax.stop_gradient(queue).T),
    }
    return loss, common.StepOutput(
        metrics=metrics,
        batch_stats=new_stats,
        target_batch_stats=new_target_stats,
        updates={"keys": jax.lax.stop_gradient(k)},
    )


def update_buffers(ctx, inp: common.StepInput, updates: dict) -> dict:
    buffers = inp.buffers
    queue, ptr = memory.enqueue(buffers["queue"], buffers["queue_ptr"], updates["keys"], ctx.mesh)
    return {"queue": queue, "queue_ptr": ptr}
