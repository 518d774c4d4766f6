"""CMCv2: PyContrast's `--method CMCv2` preset (Tian et al.; PyContrast `pycontrast/options/base_options.py` L18): CMC's two encoders on a
colour split with MoCo queues (one per view), MLP heads and EMA encoders.

Order of one step, as PyContrast's `ContrastTrainer` with `mem='moco'` and `CMCMoCo`:

```
x1, x2 = two crops of the image, each converted to YDbDr (the recipe's color_space op)
q1, q2 = normalize(online(x1))            # Y and DbDr projections of crop 1
k1, k2 = normalize(ema(shuffle(x2)))      # of crop 2, shuffle-BN, no gradient
L1 = CE([q1·k2, q1·queue2ᵀ]/τ, 0);  L2 = CE([q2·k1, q2·queue1ᵀ]/τ, 0)   # cross-view, τ 0.2
loss = L1 + L2
optimiser step;  ema = α·ema + (1−α)·online  (α 0.999, AFTER the optimiser step)
queue1 ← k1;  queue2 ← k2  (FIFO, one pointer)
```
Queues `[K, d]` per view, sharded over `data` (`memory.ROWS`), initialised `normalize(randn)` as
PyContrast's `CMCMoCo`. The model is `cmc.build_model`'s (two encoders at half `model.width`, heads
`model.projector`: PyContrast's 'mlp' head is Linear(D, D) → ReLU → Linear(D, 128)).
BN: PyContrast's DDP on 8 GPUs × 32 images, keys shuffled (`query_bn_group_size` = `key_bn_group_size`
= 32, `shuffle_bn`), counted in images so the step is the same on any number of devices.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from ssl_jax.methods import cmc, common, losses, memory, mocov2

EMA_BEFORE_KEYS = False  # PyContrast's momentum_update runs after optimizer.step()
USES_TARGET = True

build_model = cmc.build_model


@dataclasses.dataclass(frozen=True)
class Hparams(mocov2.Hparams):
    """MoCo v2's (τ 0.2, queue 65536, BN 32/32 shuffled), which are PyContrast's `CMCv2` preset and
    `base_options.py` (`--nce_t 0.2`, `--nce_k 65536`; DDP: 256 over 8 GPUs, per-GPU BN)."""


def check_config(ctx: common.StepContext) -> None:
    """MoCo v2's checks (two views, the queue divisible by the batch and the devices, BN groups)
    and a colour-space split for the two encoders."""
    mocov2.check_config(ctx)
    cmc.check_colour_space_views(ctx)


def buffer_specs(ctx: common.StepContext) -> dict:
    return {"queue1": memory.ROWS, "queue2": memory.ROWS, "queue_ptr": P()}


def init_buffers(rng, ctx: common.StepContext) -> dict:
    r1, r2 = jax.random.split(rng)
    return {
        "queue1": memory.random_rows(r1, ctx.hp.queue_size, ctx.embed_dim),
        "queue2": memory.random_rows(r2, ctx.hp.queue_size, ctx.embed_dim),
        "queue_ptr": jnp.zeros((), jnp.int32),
    }


def loss_fn(ctx, params, batch_stats, inp: common.StepInput):
    hp: Hparams = ctx.hp
    out_q, new_stats = common.online_forward(ctx, params, batch_stats, inp.views[0])
    q1 = losses.l2_normalize(out_q["projection1"])
    q2 = losses.l2_normalize(out_q["projection2"])
    out_k, new_target_stats = common.target_forward(ctx, inp.target, inp.views[1], inp.rng)
    k1 = losses.l2_normalize(out_k["projection1"])
    k2 = losses.l2_normalize(out_k["projection2"])
    queue1, queue2 = inp.buffers["queue1"], inp.buffers["queue2"]
    loss1 = losses.info_nce(q1, k2, queue2, hp.temperature)
    loss2 = losses.info_nce(q2, k1, queue1, hp.temperature)
    metrics = {
        "loss1": loss1,
        "loss2": loss2,
        "pos_sim": 0.5 * jnp.mean(jnp.sum(q1 * k2, -1) + jnp.sum(q2 * k1, -1)),
        "neg_sim": 0.5
        * (
            jnp.mean(q1 @ jax.lax.stop_gradient(queue2).T)
            + jnp.mean(q2 @ jax.lax.stop_gradient(queue1).T)
        ),
    }
    return loss1 + loss2, common.StepOutput(
        metrics=metrics,
        batch_stats=new_stats,
        target_batch_stats=new_target_stats,
        updates=jax.lax.stop_gradient({"keys1": k1, "keys2": k2}),
    )


def update_buffers(ctx, inp: common.StepInput, updates: dict) -> dict:
    b = inp.buffers
    queue1, ptr = memory.enqueue(b["queue1"], b["queue_ptr"], updates["keys1"], ctx.mesh)
    queue2, _ = memory.enqueue(b["queue2"], b["queue_ptr"], updates["keys2"], ctx.mesh)
    return {"queue1": queue1, "queue2": queue2, "queue_ptr": ptr}


def buffer_metrics(ctx, buffers) -> dict:
    """Mean L2 norm of each queue's rows (1 for normalised keys)."""
    del ctx
    return {
        f"queue{v}_mean_norm": jnp.mean(jnp.linalg.norm(buffers[f"queue{v}"], axis=-1))
        for v in (1, 2)
    }
