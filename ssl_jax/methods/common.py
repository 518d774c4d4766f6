"""The method protocol and the helpers the methods share: step context, step input/output,
forwards of the online and target networks, shuffle-BN, default model and buffer hooks.

A method is a module of pure functions satisfying `Method` (checked for every entry of
`methods.METHODS` by the tests). The engine (`train.make_train_step`) calls, per step:

```
target = EMA(target, online) if EMA_BEFORE_KEYS        # MoCo-style timing
inp = StepInput(step, rng, views, batch, buffers, target)
(loss, out), grads = value_and_grad(loss_fn)(ctx, params, batch_stats, inp)
params = optimiser(params, grads)
target = EMA(target, params) if not EMA_BEFORE_KEYS    # BYOL/SCE timing
buffers = update_buffers(ctx, inp, out.updates)
metrics = {train/<k>: out.metrics[k]} ∪ {train/<k>: buffer_metrics(ctx, buffers)[k]}
```
and once, before step 0 of a fresh run (never on resume), `prepare_buffers(ctx, state, embedder)`.
The engine reads the method's `Hparams` from `config.method_config` itself (`method_hparams`).
Optional, on the host between steps: `refresh_every_steps(ctx)` and `refresh_buffers(ctx, state,
embedder) -> state`, run after every step whose count is a multiple, before that step's checkpoint
(InterCLR's offline labels: the train split re-embedded every N epochs; `train.refresh_state`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

import flax.struct
import jax
import jax.numpy as jnp
import ml_collections
from jax.sharding import Mesh

from ssl_jax.config_checks import ConfigError, hp_field, hparams_from_config
from ssl_jax.parallel.sharding import batch_sharding

PyTree = Any


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


@flax.struct.dataclass
class StepInput:
    """Everything a step hands the method (all arrays, built inside the jitted step).

    step:    int32 scalar, the number of updates applied before this step (0 at the first step).
    rng:     the method's PRNG key of this step (`fold_in(state.rng, step)`, then split).
    views:   tuple of normalised (and, with `data.device_ops`, colour-augmented) float views
             `[B, h_v, w_v, C]`, one per entry of `config.data.views`.
    batch:   the global batch dict (`index` int32 `[B]`, `label` int32 `[B]`, uint8 `views`).
    buffers: the method's buffers (any pytree: queues, pointers, banks, label banks, centroids).
    target:  `{'params', 'batch_stats'}` of the EMA network (already updated when
             `EMA_BEFORE_KEYS`), or None for methods without one.
    """

    step: jax.Array
    rng: jax.Array
    views: tuple
    batch: dict
    buffers: PyTree
    target: PyTree = None


@flax.struct.dataclass
class StepOutput:
    """What `loss_fn` returns beside the loss.

    metrics:            `{name: scalar}`, logged as `train/<name>`.
    batch_stats:        the online network's new BN running statistics.
    target_batch_stats: the target network's new BN statistics (None without a target).
    updates:            what `update_buffers` needs (already stop-gradiented), any pytree.
    """

    metrics: dict
    batch_stats: PyTree
    target_batch_stats: PyTree = None
    updates: PyTree = None


@runtime_checkable
class Method(Protocol):
    """A method module. `Hparams` is a frozen dataclass whose fields are the allowed keys of
    `config.method_config` (read by `method_hparams`). `build_model`, `prepare_buffers` and
    `buffer_metrics` may be left out: `with_defaults` gives them (`DEFAULTS`)."""

    EMA_BEFORE_KEYS: bool  # target EMA before the keys (MoCo) or after the optimiser (SCE)
    USES_TARGET: bool  # False: no EMA network (IR); StepInput.target is None
    Hparams: type

    def check_config(self, ctx: StepContext) -> None:
        """Raise `ConfigError` for constraints between the config and the run (views, sizes)."""

    def build_model(self, config: ml_collections.ConfigDict) -> Any:
        """The flax module: `__call__(x, train, bn_groups, use_predictor, head_bn_groups)` (groups of
        the encoders' BN and of the heads' BN), `features(x)`, a `feature_dim` and `ENCODERS`
        (names of its ResNet sub-modules, for the export). Default: `build_model` below."""

    def buffer_specs(self, ctx: StepContext) -> PyTree:
        """PartitionSpecs as a pytree prefix of the buffers (`memory.ROWS` for queues and banks)."""

    def init_buffers(self, rng: jax.Array, ctx: StepContext) -> PyTree:
        """Fresh buffers (traced inside a jit whose out_shardings follow `buffer_specs`)."""

    def prepare_buffers(self, ctx: StepContext, state: Any, embedder: Any) -> Any:
        """Once before step 0 of a fresh run, never on resume: e.g. fill a bank with features of
        the whole train set (`embedder.embed_rows`). Returns the state.
        Default: nothing to prepare (`prepare_buffers` below)."""

    def loss_fn(
        self, ctx: StepContext, params: PyTree, batch_stats: PyTree, inp: StepInput
    ) -> tuple[jax.Array, StepOutput]:
        """The scalar loss (differentiated in `params`) and its `StepOutput`."""

    def update_buffers(self, ctx: StepContext, inp: StepInput, updates: PyTree) -> PyTree:
        """New buffers after the loss (queue/bank writes through `memory`)."""

    def buffer_metrics(self, ctx: StepContext, buffers: PyTree) -> dict:
        """`{name: scalar}` of the new buffers, logged as `train/<name>` (cheap: runs every step).
        Default: none (`no_buffer_metrics`)."""


def method_hparams(method: Method, config: ml_collections.ConfigDict) -> Any:
    """The method's `Hparams` from `config.method_config` (unknown keys, types and ranges rejected)."""
    return hparams_from_config(method.Hparams, config)


# --------------------------------------------------------------------------------------------------
# Defaults of the hooks a method module may leave out (`DEFAULTS`, given by `with_defaults` to every
# entry of `methods.METHODS`).


def build_model(config: ml_collections.ConfigDict):
    """backbone → projector [→ predictor] from `config.model` (`models.SSLModel`)."""
    from ssl_jax.models import build_model as build_ssl_model

    return build_ssl_model(config.model)


def prepare_buffers(ctx: StepContext, state, embedder):
    """No preparation: the buffers `init_buffers` made are the ones step 0 sees."""
    del ctx, embedder
    return state


def no_buffer_metrics(ctx: StepContext, buffers) -> dict:
    del ctx, buffers
    return {}


def queue_metrics(ctx: StepContext, buffers) -> dict:
    """Mean L2 norm of the queue's rows (1 for normalised keys; JCL's mean keys are shorter)."""
    del ctx
    return {"queue_mean_norm": jnp.mean(jnp.linalg.norm(buffers["queue"], axis=-1))}


DEFAULTS = {
    "build_model": build_model,
    "prepare_buffers": prepare_buffers,
    "buffer_metrics": no_buffer_metrics,
}


def with_defaults(method):
    """`method` (a module) with each hook of `DEFAULTS` it does not define set to the default; the
    hooks it defines (or imports from its base) are kept. Returns it."""
    for name, default in DEFAULTS.items():
        if not hasattr(method, name):
            setattr(method, name, default)
    return method


# --------------------------------------------------------------------------------------------------
# BN statistics groups: a property of the run, counted in images, never in devices.

BN_GROUP_SCOPES = ("all", "backbone")


@dataclasses.dataclass(frozen=True)
class QueryBN:
    """BN statistics of the online (query) encoder, shared by every method's `Hparams`.

    query_bn_group_size: images per BN statistics group in each online forward; 0 = the whole
      global batch (SyncBN). The official DDP runs without SyncBN (MoCo v2, JCL: 8 GPUs × 32) are 32.
      Groups are contiguous slices of the global batch, so the result is the same on any number of
      devices (a group size that is a multiple of the per-device batch also needs no communication).
    bn_group_scope: which BN layers the groups apply to: 'all' (per-GPU BN: backbone and heads) or
      'backbone' (SCE's `SplitBatchNorm2D`, which replaces the trunk's BatchNorm2d only; the heads'
      BN sees the whole batch).
    """

    query_bn_group_size: int = hp_field(0, low=0)
    bn_group_scope: str = hp_field("all", choices=BN_GROUP_SCOPES)


@dataclasses.dataclass(frozen=True)
class QueryKeyBN(QueryBN):
    """`QueryBN` plus the target (key) encoder's groups and MoCo's shuffle-BN.

    key_bn_group_size: images per BN group in each target forward (JCL: of the M'·B key crops in
      one forward); 0 = the whole batch.
    shuffle_bn: permute the key batch before the target forward and un-permute after, so each BN
      group sees a random subset and BN cannot leak which key belongs to which query. With one key
      group (size 0 or the whole batch) it would do nothing, and is refused.
    """

    key_bn_group_size: int = hp_field(0, low=0)
    shuffle_bn: bool = False


def bn_groups(group_size: int, batch: int) -> int:
    """Number of BN groups of a forward of `batch` images: 1 for group size 0 (whole batch)."""
    if group_size and batch % group_size:
        raise ValueError(f"BN group size {group_size} does not divide the batch of {batch} images")
    return 1 if group_size == 0 else batch // group_size


def check_bn_group_size(key: str, group_size: int, batch: int, forward: str) -> None:
    """`group_size` (0 or a divisor of `batch`) is valid for a forward of `batch` images."""
    if group_size and batch % group_size:
        divisors = [d for d in range(1, batch + 1) if batch % d == 0]
        raise ConfigError(
            f"config.method_config.{key}={group_size} must divide the {forward} ({batch} images); "
            f"allowed: 0 (the whole batch, SyncBN) or one of {divisors}"
        )


def check_bn_config(ctx: StepContext, *, key_batch: int | None = None) -> None:
    """The BN group sizes divide the batches of the online forwards (`global_batch_size` each) and,
    with `key_batch` (images per target forward), of the target forwards; shuffle-BN needs >1 group."""
    hp = ctx.hp
    batch = ctx.config.global_batch_size
    check_bn_group_size(
        "query_bn_group_size", hp.query_bn_group_size, batch, "online forward's batch"
    )
    if key_batch is None:
        return
    check_bn_group_size(
        "key_bn_group_size", hp.key_bn_group_size, key_batch, "target forward's batch"
    )
    if hp.shuffle_bn and bn_groups(hp.key_bn_group_size, key_batch) == 1:
        raise ConfigError(
            f"config.method_config.shuffle_bn=True does nothing with key_bn_group_size="
            f"{hp.key_bn_group_size} (one BN group over the {key_batch} keys of a target forward): "
            "set key_bn_group_size to a proper divisor of that batch (MoCo's DDP: 32 = 256 / 8 GPUs) "
            "or shuffle_bn=False"
        )


def forward(
    ctx: StepContext,
    params,
    batch_stats,
    x,
    *,
    train: bool = True,
    bn_group_size: int = 0,
    use_predictor: bool = True,
):
    """Online/target forward in train mode with BN groups of `bn_group_size` images (0 = whole
    batch) on the layers `ctx.hp.bn_group_scope` names. Returns (outputs dict, new batch_stats)."""
    groups = bn_groups(bn_group_size, x.shape[0])
    scope = getattr(ctx.hp, "bn_group_scope", "all")
    out, updates = ctx.model.apply(
        {"params": params, "batch_stats": batch_stats},
        x,
        train=train,
        bn_groups=groups,
        head_bn_groups=groups if scope == "all" else 1,
        use_predictor=use_predictor,
        mutable=["batch_stats"],
    )
    return out, updates["batch_stats"]


def online_forward(ctx: StepContext, params, batch_stats, x):
    """The online encoder's forward with the run's `query_bn_group_size`."""
    return forward(ctx, params, batch_stats, x, bn_group_size=ctx.hp.query_bn_group_size)


def target_forward(ctx: StepContext, target: dict, x, rng):
    """Target (key) encoder forward without predictor and without gradient, with the run's
    `key_bn_group_size` and, with `shuffle_bn` (MoCo's shuffle-BN), the batch permuted before the
    forward (each BN group sees a random subset of the batch, as DDP's shuffle across GPUs) and
    un-permuted after: BN statistics can no longer leak which key belongs to which query.
    """
    hp = ctx.hp
    if hp.shuffle_bn:
        perm = jax.random.permutation(rng, x.shape[0])
        # the permuted batch stays sharded over `data`: without the constraint GSPMD gives the
        # gather a replicated output and every device runs the key forward on the whole batch
        x = jax.lax.with_sharding_constraint(x[perm], batch_sharding(ctx.mesh))
    out, new_stats = forward(
        ctx,
        target["params"],
        target["batch_stats"],
        x,
        bn_group_size=hp.key_bn_group_size,
        use_predictor=False,
    )
    out = jax.lax.stop_gradient(out)
    if hp.shuffle_bn:
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
