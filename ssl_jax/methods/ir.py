"""Instance discrimination with a memory bank (IR; Wu et al. 2018, as the Ring code's `NCE` baseline).

The bank `[N, D]` holds one L2-normalised embedding per training example, indexed by example id and sharded
over devices. Per step: K negatives drawn uniformly from the bank (the positive, the sample's own stale
entry, is column 0), loss `losses.ir_nce`, then `bank[i] ← normalize(m·bank[i] + (1−m)·q_i)`.
Official Ring code: m = 0 (replace); Wu et al. and CMC: m = 0.5 (our default, set by config).
Bank init `bank_init`: 'normal' (default) = normalize(randn); 'uniform' = normalize(U(±1/√(D/3))),
the Ring code's `MemoryBank._create` (`src/objectives/memory.py` L17–24), set by its configs.
No bank statistic is logged per step (`buffer_metrics`): a norm over N rows each step is not free at
ImageNet scale, and the bank's rows are normalised on every write.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ssl_jax.config_checks import ConfigError, hp_field
from ssl_jax.methods import common, losses, memory

EMA_BEFORE_KEYS = False
USES_TARGET = False  # no momentum encoder: the bank is the slow-moving target


@dataclasses.dataclass(frozen=True)
class Hparams(common.QueryBN):
    temperature: float = hp_field(0.07, low=0.0, low_open=True)
    num_negatives: int = hp_field(4096, low=1)
    bank_size: int = hp_field(1_281_167, low=1)  # must equal the number of training examples
    bank_momentum: float = hp_field(0.5, low=0.0, high=1.0, high_open=True)
    bank_init: str = hp_field("normal", choices=memory.ROW_INITS)


def check_config(ctx: common.StepContext) -> None:
    common.require_views(ctx, 1)
    if ctx.hp.bank_size != ctx.num_train_examples:
        raise ConfigError(
            f"config.method_config.bank_size={ctx.hp.bank_size} differs from the number of "
            f"training examples ({ctx.num_train_examples}); allowed: {ctx.num_train_examples}"
        )
    common.require_divisible(
        "config.method_config.bank_size", ctx.hp.bank_size, ctx.num_devices, "the device count"
    )
    common.check_bn_config(ctx)


def buffer_specs(ctx: common.StepContext) -> dict:
    return {"bank": memory.ROWS}


def init_buffers(rng, ctx: common.StepContext) -> dict:
    return {"bank": memory.random_rows(rng, ctx.hp.bank_size, ctx.embed_dim, init=ctx.hp.bank_init)}


def bank_loss(ctx, q, index, negatives, bank) -> tuple[jax.Array, jax.Array]:
    """`losses.ir_nce` over the own (stale) bank entry and the drawn rows → (loss, similarities
    `[B, 1 + K]`, column 0 the positive). q `[B, D]` normalised, index `[B]`, negatives `[B, K]`
    global rows of the sharded bank (read device-locally: `memory.row_similarities`)."""
    columns = jnp.concatenate([index[:, None], negatives], axis=1)
    sims = memory.row_similarities(bank, q, columns, ctx.mesh)  # [B, 1+K]
    return losses.ir_nce(sims, ctx.hp.temperature), sims


def loss_fn(ctx, params, batch_stats, inp: common.StepInput):
    hp: Hparams = ctx.hp
    out, new_stats = common.online_forward(ctx, params, batch_stats, inp.views[0])
    q = losses.l2_normalize(out["projection"])
    noise = jax.random.randint(inp.rng, (q.shape[0], hp.num_negatives), 0, hp.bank_size, jnp.int32)
    loss, sims = bank_loss(ctx, q, inp.batch["index"], noise, inp.buffers["bank"])
    metrics = {"pos_sim": jnp.mean(sims[:, 0]), "neg_sim": jnp.mean(sims[:, 1:])}
    return loss, common.StepOutput(
        metrics=metrics,
        batch_stats=new_stats,
        updates={"embeddings": jax.lax.stop_gradient(q)},
    )


def update_buffers(ctx, inp: common.StepInput, updates: dict) -> dict:
    m = ctx.hp.bank_momentum
    index = inp.batch["index"]
    bank = inp.buffers["bank"]
    old = memory.read_rows(bank, index, ctx.mesh)
    new = losses.l2_normalize(m * old + (1.0 - m) * updates["embeddings"])
    return {"bank": memory.write_rows(bank, index, new, ctx.mesh)}
