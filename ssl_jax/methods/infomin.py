"""InfoMin: PyContrast's `--method InfoMin` preset (Tian et al. 2020, "What Makes for Good Views
for Contrastive Learning?"; PyContrast `pycontrast/options/base_options.py` L19): MoCo with aug "D" (`recipes.infomin`), an MLP head,
τ 0.15 and a PIRL-style jigsaw branch.

Order of one step, as PyContrast's `ContrastTrainer._train_moco` with `RGBMultiHeads` and `RGBMoCo`:

```
x1, x2 = two aug-"D" crops of the image;  x_jig = its 9 jigsaw patches (views[2], a 3 × 3 mosaic)
k     = normalize(ema(shuffle(x2)))                         # shuffle-BN, no gradient
q     = normalize(head(encoder(x1)))
q_jig = normalize(fc2(permute(fc1(encoder(x_jig)))))        # a second forward: its own BN batch
logits     = [q·k, q·queueᵀ]/τ;  logits_jig = [q_jig·k, q_jig·queueᵀ]/τ     # τ 0.15
loss = (1 − β)·CE(logits, 0) + β·CE(logits_jig, 0)          # β 0.5
optimiser step;  ema = α·ema + (1 − α)·online  (α 0.999, AFTER the optimiser step)
queue ← k  (FIFO, 65536)
```
`permute`: a uniformly random order of each image's 9 patch embeddings (`JigsawHead`'s
`get_shuffle_ids`), drawn from the step's key. The EMA network carries a jigsaw head too (PyContrast's
`model_ema` is the same `RGBMultiHeads`), unused. The encoder's BN running statistics are updated by
both online forwards in turn (query crop, then patches), as torch's two `encoder` calls do; the
patches' BN groups are the query forward's (PyContrast's per-GPU BN: the 32 images of a GPU and
their 288 patches). `jigsaw=False` is InfoMin without the jigsaw branch (2 views).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from ssl_jax.config_checks import ConfigError, hp_field
from ssl_jax.methods import common, losses, mocov2

EMA_BEFORE_KEYS = False  # PyContrast's momentum_update runs after optimizer.step()
USES_TARGET = True

buffer_specs = mocov2.buffer_specs
init_buffers = mocov2.init_buffers
update_buffers = mocov2.update_buffers
buffer_metrics = common.queue_metrics


@dataclasses.dataclass(frozen=True)
class Hparams(mocov2.Hparams):
    """MoCo v2's (queue 65536, BN 32/32 shuffled: PyContrast's DDP of 8 GPUs × 32) with the
    preset's τ 0.15 (`--nce_t`), the jigsaw branch on and its weight β 0.5 (`--beta`)."""

    temperature: float = hp_field(0.15, low=0.0, low_open=True)
    jigsaw: bool = True
    jigsaw_weight: float = hp_field(0.5, low=0.0, high=1.0)


def jigsaw_grid(config) -> int:
    """The `grid` of the `jigsaw` op that ends the third view's recipe (3: 9 patches)."""
    data = config.data
    if len(data.views) < 3:
        raise ConfigError(
            "config.data.views: the jigsaw branch needs a third view whose recipe ends with a "
            "'jigsaw' op (recipes.jigsaw), or config.method_config.jigsaw=False"
        )
    recipe = data.recipes[data.views[2]]
    if not recipe or recipe[-1]["op"] != "jigsaw":
        raise ConfigError(
            f"config.data.recipes[{data.views[2]!r}] (the third view, the jigsaw patches) must end "
            "with a 'jigsaw' op (recipes.jigsaw)"
        )
    return int(recipe[-1]["grid"])


def build_model(config):
    """`models.SSLModel` with a `JigsawHead` over grid² patches when the jigsaw branch is on."""
    from ssl_jax.models import build_model as build_ssl_model

    jigsaw = config.method_config.get("jigsaw", Hparams.jigsaw)  # checked by validation.validate
    patches = jigsaw_grid(config) ** 2 if jigsaw else 0
    return build_ssl_model(config.model, jigsaw_patches=patches)


def check_config(ctx: common.StepContext) -> None:
    """MoCo v2's checks (queue divisible by the key batch and the devices, BN groups) with 3 views
    when the jigsaw branch is on (the third one's recipe ends with the jigsaw op)."""
    mocov2.check_config(ctx, num_views=3 if ctx.hp.jigsaw else 2)
    if ctx.hp.jigsaw:
        jigsaw_grid(ctx.config)


def to_patches(mosaic: jnp.ndarray, grid: int) -> jnp.ndarray:
    """`[N, grid·p, grid·p, C]` mosaic (the jigsaw op's layout) → `[N·grid², p, p, C]` patches,
    image-major, cells in row-major order."""
    n, height, width, channels = mosaic.shape
    p, q = height // grid, width // grid
    x = mosaic.reshape(n, grid, p, grid, q, channels).transpose(0, 1, 3, 2, 4, 5)
    return x.reshape(n * grid * grid, p, q, channels)


def loss_fn(ctx, params, batch_stats, inp: common.StepInput):
    hp: Hparams = ctx.hp
    key_rng, order_rng = jax.random.split(inp.rng)
    out_q, new_stats = common.online_forward(ctx, params, batch_stats, inp.views[0])
    q = losses.l2_normalize(out_q["projection"])
    out_k, new_target_stats = common.target_forward(ctx, inp.target, inp.views[1], key_rng)
    k = losses.l2_normalize(out_k["projection"])
    queue = inp.buffers["queue"]
    loss_q = losses.info_nce(q, k, queue, hp.temperature)
    metrics = {
        "pos_sim": jnp.mean(jnp.sum(q * k, axis=-1)),
        "neg_sim": jnp.mean(q @ jax.lax.stop_gradient(queue).T),
    }
    loss = loss_q
    if hp.jigsaw:
        grid = jigsaw_grid(ctx.config)
        batch = inp.views[2].shape[0]
        order = jnp.argsort(jax.random.uniform(order_rng, (batch, grid * grid)), axis=1)
        q_jig, updates = ctx.model.apply(
            {"params": params, "batch_stats": new_stats},
            to_patches(inp.views[2], grid),
            order,
            train=True,
            bn_groups=common.bn_groups(hp.query_bn_group_size, batch),
            method="jigsaw_projection",
            mutable=["batch_stats"],
        )
        new_stats = updates["batch_stats"]
        q_jig = losses.l2_normalize(q_jig)
        loss_jig = losses.info_nce(q_jig, k, queue, hp.temperature)
        loss = (1.0 - hp.jigsaw_weight) * loss_q + hp.jigsaw_weight * loss_jig
        metrics.update(loss_instance=loss_q, loss_jigsaw=loss_jig)
    return loss, common.StepOutput(
        metrics=metrics,
        batch_stats=new_stats,
        target_batch_stats=new_target_stats,
        updates={"keys": jax.lax.stop_gradient(k)},
    )
