"""Helpers shared by the methods: the step context, forwards of the online and target networks, shuffle-BN."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
from jax.sharding import Mesh

from ssl_jax.configs import ConfigError


@dataclasses.dataclass(frozen=True)
class StepContext:
    """What a method's pure functions need besides arrays: the model, the mesh and the static config."""

    model: Any
    mesh: Mesh
    config: ml_collections.ConfigDict
    hp: Any
    num_train_examples: int
    total_steps: int
    steps_per_epoch: int

    @property
    def num_devices(self) -> int:
        return self.mesh.size

    @property
    def embed_dim(self) -> int:
        return self.config.model.projector.out_dim


def bn_groups(requested: int, ctx: StepContext) -> int:
    """BN statistics groups: 0 means one group per device (DDP-style per-GPU BN), else as given."""
    return ctx.num_devices if requested == 0 else requested


def forward(
    ctx: StepContext,
    params,
    batch_stats,
    x,
    *,
    train: bool = True,
    groups: int = 1,
    use_predictor: bool = True,
):
    """Online/target forward in train mode. Returns (outputs dict, new batch_stats)."""
    out, updates = ctx.model.apply(
        {"params": params, "batch_stats": batch_stats},
        x,
        train=train,
        bn_groups=groups,
        use_predictor=use_predictor,
        mutable=["batch_stats"],
    )
    return out, updates["batch_stats"]


def target_forward(ctx: StepContext, target: dict, x, rng, *, shuffle: bool, groups: int):
    """Target (key) encoder forward without predictor and without gradient.

    With `shuffle` (MoCo's shuffle-BN) the global key batch is permuted before the forward, so each BN
    group (device) sees a random subset of the batch, and un-permuted after: BN statistics can no longer
    leak which key belongs to which query.
    """
    if shuffle:
        perm = jax.random.permutation(rng, x.shape[0])
        x = x[perm]
    out, new_stats = forward(
        ctx, target["params"], target["batch_stats"], x, groups=groups, use_predictor=False
    )
    out = jax.lax.stop_gradient(out)
    if shuffle:
        inverse = jnp.argsort(perm)
        out = jax.tree.map(lambda a: a[inverse], out)
    return out, new_stats


def require_views(ctx: StepContext, count: int) -> None:
    views = ctx.config.data.views
    if len(views) != count:
        raise ConfigError(
            f"config.data.views={tuple(views)} has {len(views)} views; "
            f"method {ctx.config.method!r} needs exactly {count}"
        )


def require_divisible(key: str, value: int, divisor: int, what: str) -> None:
    if value % divisor:
        raise ConfigError(
            f"{key}={value} must be divisible by {what} ({divisor}); allowed: multiples of {divisor}"
        )
