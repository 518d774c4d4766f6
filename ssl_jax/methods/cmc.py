"""CMC (Tian, Krishnan, Isola, "Contrastive Multiview Coding", ECCV 2020) with its memory banks.

Official code: HobbitLong/CMC `train_CMC.py`, `NCE/NCEAverage.py`, `NCE/NCECriterion.py`.
One crop per image, converted to a colour space (the recipe's `color_space` op:
Lab by default) and split into two views, L (1 channel) and ab (2 channels), each read by its own
encoder (`models.TwoEncoderModel`: two ResNets at half `model.width`, a linear head to 128 each,
L2-normalised). Order of one step, as the code:

```
f1 = normalize(head1(enc1(L)));  f2 = normalize(head2(enc2(ab)))
idx = K+1 uniform draws from [0, N) per sample, idx[:, 0] = own index (no exclusion of it)
s1 = bank2[idx]·f1/τ   (out_l:  L features against the ab memory)
s2 = bank1[idx]·f2/τ   (out_ab: ab features against the L memory)
NCE (default):  Z_v = mean(exp(s_v))·N at the first step, then kept (buffers['z'], so a resumed run
                keeps it);  L_v = cmc_nce(s_v, Z_v, N)
softmax:        L_v = CE(s_v, 0)
loss = L_1 + L_2
bank1[idx0] = normalize(m·bank1[idx0] + (1−m)·f1);  bank2 likewise   (m 0.5, after the loss)
```
The code updates the memory inside the forward, after reading the rows it scores, which is the same
as this update after the loss. Banks `[N, 128]` per view are sharded over `data` (`memory.ROWS`), initialised
uniform in ±1/√(d/3) and not normalised, as `NCEAverage`'s `torch.rand(N, d)·2·stdv − stdv`
(`bank_init='normal'`: `normalize(randn)`, PyContrast's `CMCMem`, `memory/mem_bank.py` L102–105).

Hyper-parameters (`Hparams` defaults = `train_CMC.py`'s): τ 0.07 (README: 0.1 for STL-10), K 16384
(README: 4096 for the released weights), bank momentum 0.5, NCE loss (`loss='softmax'` = the code's
`--softmax`, CE; the maintainer recommends it on small data sets, where Z is ill-estimated, CMC issue
#12, and PyContrast's `CMC` preset always uses it).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from ssl_jax.config_checks import ConfigError, hp_field
from ssl_jax.methods import common, losses, memory

EMA_BEFORE_KEYS = False
USES_TARGET = False  # no momentum encoder: the banks are the slow-moving targets

LOSSES = ("nce", "softmax")


@dataclasses.dataclass(frozen=True)
class Hparams(common.QueryBN):
    """Defaults: `train_CMC.py`'s (module docstring)."""

    temperature: float = hp_field(0.07, low=0.0, low_open=True)  # --nce_t
    num_negatives: int = hp_field(16384, low=1)  # --nce_k
    bank_size: int = hp_field(1_281_167, low=1)  # must equal the number of training examples
    bank_momentum: float = hp_field(0.5, low=0.0, high=1.0, high_open=True)  # --nce_m
    loss: str = hp_field("nce", choices=LOSSES)  # 'softmax' = --softmax (NCESoftmaxLoss)
    nce_eps: float = hp_field(1e-7, low=0.0)  # NCECriterion's eps
    # 'uniform': NCEAverage's rand·2s − s, not normalised; 'normal': PyContrast CMCMem's normalize(randn)
    bank_init: str = hp_field("uniform", choices=memory.ROW_INITS)


def build_model(config):
    """`models.TwoEncoderModel`: two `config.model.backbone`s at half `config.model.width` (CMC's
    `resnet50v1` = width 1.0), each with the head `config.model.projector` (CMC: linear to 128)."""
    from ssl_jax.models import build_two_encoder_model

    return build_two_encoder_model(config.model, width_factor=0.5, split=1)


def check_colour_space_views(ctx: common.StepContext) -> None:
    """Every view's recipe ends with a `color_space` (or `learned_flow`) op and gives 3 channels:
    the model splits the converted image into its 1- and 2-channel views."""
    data = ctx.config.data
    for name in data.views:
        ops = data.recipes[name]
        if not ops or ops[-1]["op"] not in ("color_space", "learned_flow"):
            raise ConfigError(
                f"config.data.recipes.{name} must end with a color_space op (e.g. "
                f"recipes.cmc(size, 'lab')) or a learned_flow op (InfoMin's learned views): "
                f"method {ctx.config.method!r} splits a colour-space image into its two views"
            )
    if data.channels != 3:
        raise ConfigError(
            f"config.data.channels={data.channels}: method {ctx.config.method!r} needs RGB "
            "input; allowed: 3"
        )


def check_config(ctx: common.StepContext) -> None:
    hp: Hparams = ctx.hp
    common.require_views(ctx, 1)
    check_colour_space_views(ctx)
    if hp.bank_size != ctx.num_train_examples:
        raise ConfigError(
            f"config.method_config.bank_size={hp.bank_size} differs from the number of "
            f"training examples ({ctx.num_train_examples}); allowed: {ctx.num_train_examples}"
        )
    common.require_divisible(
        "config.method_config.bank_size", hp.bank_size, ctx.num_devices, "the device count"
    )
    common.check_bn_config(ctx)


def buffer_specs(ctx: common.StepContext) -> dict:
    return {"bank1": memory.ROWS, "bank2": memory.ROWS, "z": P()}


def init_buffers(rng, ctx: common.StepContext) -> dict:
    r1, r2 = jax.random.split(rng)
    n, d, init = ctx.hp.bank_size, ctx.embed_dim, ctx.hp.bank_init
    bank = lambda r: memory.random_rows(r, n, d, normalize=init == "normal", init=init)
    return {
        "bank1": bank(r1),
        "bank2": bank(r2),
        "z": jnp.full((2,), -1.0, jnp.float32),  # NCEAverage's params[2:4] = -1: not yet set
    }


def draw_columns(rng, index: jax.Array, num_negatives: int, num_rows: int) -> jax.Array:
    """`[B, K+1]` bank rows: column 0 the own index, K uniform draws (may repeat it)."""
    noise = jax.random.randint(rng, (index.shape[0], num_negatives), 0, num_rows, jnp.int32)
    return jnp.concatenate([index[:, None].astype(jnp.int32), noise], axis=1)


def loss_fn(ctx, params, batch_stats, inp: common.StepInput):
    hp: Hparams = ctx.hp
    out, new_stats = common.online_forward(ctx, params, batch_stats, inp.views[0])
    f1 = losses.l2_normalize(out["projection1"])
    f2 = losses.l2_normalize(out["projection2"])
    columns = draw_columns(inp.rng, inp.batch["index"], hp.num_negatives, hp.bank_size)
    sims1 = memory.row_similarities(inp.buffers["bank2"], f1, columns, ctx.mesh)  # out_l
    sims2 = memory.row_similarities(inp.buffers["bank1"], f2, columns, ctx.mesh)  # out_ab
    s1, s2 = sims1 / hp.temperature, sims2 / hp.temperature
    z = inp.buffers["z"]
    metrics = {}
    if hp.loss == "nce":
        first = jnp.stack([losses.cmc_partition(s, hp.bank_size) for s in (s1, s2)])
        z = jnp.where(z > 0, z, first)
        loss1 = losses.cmc_nce(s1, z[0], hp.bank_size, hp.nce_eps)
        loss2 = losses.cmc_nce(s2, z[1], hp.bank_size, hp.nce_eps)
        metrics.update(z1=z[0], z2=z[1])
    else:
        loss1, loss2 = losses.cmc_softmax(s1), losses.cmc_softmax(s2)
    sims = jnp.stack([sims1, sims2])
    metrics.update(
        loss1=loss1,
        loss2=loss2,
        pos_sim=jnp.mean(sims[:, :, 0]),
        neg_sim=jnp.mean(sims[:, :, 1:]),
    )
    updates = jax.lax.stop_gradient({"embeddings1": f1, "embeddings2": f2, "z": z})
    return loss1 + loss2, common.StepOutput(metrics=metrics, batch_stats=new_stats, updates=updates)


def momentum_write(bank, index, embeddings, momentum: float, mesh):
    """`bank[index] = normalize(m·bank[index] + (1−m)·embeddings)` (`NCEAverage`'s update)."""
    old = memory.read_rows(bank, index, mesh)
    new = losses.l2_normalize(momentum * old + (1.0 - momentum) * embeddings)
    return memory.write_rows(bank, index, new, mesh)


def update_buffers(ctx, inp: common.StepInput, updates: dict) -> dict:
    m, index, buffers = ctx.hp.bank_momentum, inp.batch["index"], inp.buffers
    return {
        "bank1": momentum_write(buffers["bank1"], index, updates["embeddings1"], m, ctx.mesh),
        "bank2": momentum_write(buffers["bank2"], index, updates["embeddings2"], m, ctx.mesh),
        "z": updates["z"],
    }
