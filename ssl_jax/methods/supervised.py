"""Supervised baseline: the labels' cross-entropy on a head over the pooled backbone.

Not a self-supervised method: the ceiling the detection study (`results/detection.md`)
reads pretrained encoders against, "the same encoder trained on the same images' labels", as the
seed papers' supervised ImageNet rows. The projector is the classifier (`model.projector` with
`out_dim` = `num_classes`; no hidden layer = a linear head); loss
`mean_i -log softmax(z_i)[y_i]` on view 0 with the batch's labels.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import optax

from ssl_jax.config_checks import ConfigError, hp_field
from ssl_jax.methods import common

EMA_BEFORE_KEYS = False
USES_TARGET = False


@dataclasses.dataclass(frozen=True)
class Hparams(common.QueryBN):
    num_classes: int = hp_field(10, low=2)


def check_config(ctx: common.StepContext) -> None:
    common.require_views(ctx, 1)
    out_dim = ctx.config.model.projector.out_dim
    if out_dim != ctx.hp.num_classes:
        raise ConfigError(
            f"config.model.projector.out_dim={out_dim} is the classifier's width and must equal "
            f"config.method_config.num_classes={ctx.hp.num_classes}; allowed: {ctx.hp.num_classes}"
        )
    common.check_bn_config(ctx)


def buffer_specs(ctx: common.StepContext) -> dict:
    del ctx
    return {}


def init_buffers(rng, ctx: common.StepContext) -> dict:
    del rng, ctx
    return {}


def loss_fn(ctx, params, batch_stats, inp: common.StepInput):
    out, new_stats = common.online_forward(ctx, params, batch_stats, inp.views[0])
    logits = out["projection"].astype(jnp.float32)
    labels = inp.batch["label"]
    loss = jnp.mean(optax.softmax_cross_entropy_with_integer_labels(logits, labels))
    accuracy = jnp.mean((jnp.argmax(logits, axis=-1) == labels).astype(jnp.float32))
    return loss, common.StepOutput(metrics={"accuracy": accuracy}, batch_stats=new_stats)


def update_buffers(ctx, inp: common.StepInput, updates: dict) -> dict:
    del ctx, updates
    return inp.buffers
