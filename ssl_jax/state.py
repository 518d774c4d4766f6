"""The train state: one pytree of arrays, so a checkpoint is the state and resume is exact."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flax.struct
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

PyTree = Any
BUFFER_DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}  # config.buffer_dtype


class TrainState(flax.struct.PyTreeNode):
    """step, online params/BN stats, optimiser state, target (EMA) params/BN stats, method buffers, rng.

    The model and the optax transform live outside (they are code, not state).
    """

    step: jnp.ndarray
    params: PyTree
    batch_stats: PyTree
    opt_state: PyTree
    target_params: PyTree  # {} for methods without a target network (IR)
    target_batch_stats: PyTree
    buffers: PyTree  # method buffers, any pytree: queue, queue_ptr, bank, labels, centroids, ...
    rng: jnp.ndarray  # raw uint32[2] key, checkpointable


def buffer_shardings(mesh: Mesh, buffer_specs, buffers):
    """NamedShardings of the buffers from `buffer_specs`, a pytree prefix of them: a spec at a node
    applies to every leaf below it (e.g. `{'banks': memory.ROWS, 'ptr': P()}` for a dict of banks)."""
    is_spec = lambda x: isinstance(x, P)
    return jax.tree.map(
        lambda spec, sub: jax.tree.map(lambda _: NamedSharding(mesh, spec), sub),
        buffer_specs,
        buffers,
        is_leaf=is_spec,
    )


def cast_rows(buffers, buffer_specs, dtype: Any):
    """The buffers with every floating leaf of rank >= 2 under a spec sharded along `data` (queues
    and banks: `memory.ROWS`) in `dtype` (`config.buffer_dtype`); pointers, label banks and
    replicated arrays (centroids) unchanged. `dtype` float32 returns the buffers as they are."""
    dtype = jnp.dtype(dtype)
    if dtype == jnp.float32:
        return buffers
    is_spec = lambda x: isinstance(x, P)

    def cast(spec, sub):
        rows = len(spec) > 0 and spec[0] is not None
        return jax.tree.map(
            lambda x: (
                x.astype(dtype)
                if rows and x.ndim >= 2 and jnp.issubdtype(x.dtype, jnp.floating)
                else x
            ),
            sub,
        )

    return jax.tree.map(cast, buffer_specs, buffers, is_leaf=is_spec)


def same_dtypes(new: PyTree, old: PyTree) -> PyTree:
    """`new` with each leaf in the dtype of `old`'s (a step's buffer update keeps bf16 rows bf16)."""
    return jax.tree.map(lambda n, o: n.astype(o.dtype), new, old)


def state_shardings(abstract_state: TrainState, mesh: Mesh, buffer_specs) -> TrainState:
    """NamedShardings for every leaf: buffers as the method says (queues/banks P('data')), rest replicated."""
    replicated = NamedSharding(mesh, P())
    shardings = jax.tree.map(lambda _: replicated, abstract_state)
    return shardings.replace(buffers=buffer_shardings(mesh, buffer_specs, abstract_state.buffers))


def state_initializer(
    *, tx, method, ctx, sample_input: jax.ShapeDtypeStruct
) -> Callable[[jax.Array], TrainState]:
    """`rng → TrainState`, the state made directly in its sharded layout: eval_shape → shardings →
    jit(out_shardings), compiled on the first call and reused after (a run's fresh state and its
    probe's random-init encoder share one compilation: most of it is the initialisers' random
    draws, seconds on a CPU whatever the model's width).

    The model is `ctx.model` (the method's `build_model`); the buffers come from `method.init_buffers`
    with shardings from `method.buffer_specs`, queues and banks in `config.buffer_dtype`. Params,
    optimiser state and BN statistics are float32 whatever `config.model.dtype` (so are
    checkpoints)."""
    buffer_dtype = BUFFER_DTYPES[ctx.config.get("buffer_dtype", "float32")]
    model, mesh = ctx.model, ctx.mesh

    def init(rng):
        init_rng, buffer_rng, state_rng = jax.random.split(rng, 3)
        dummy = jnp.zeros(sample_input.shape, sample_input.dtype)
        variables = model.init({"params": init_rng}, dummy, train=False)
        params, batch_stats = variables["params"], variables.get("batch_stats", {})
        uses_target = method.USES_TARGET
        target = params  # copied below (`ema.target_init='copy'`)
        if uses_target and ctx.config.ema.get("target_init", "copy") == "independent":
            # its own random draw, as a second module instantiated on its own (CEA-LIST/SCE)
            target = model.init({"params": jax.random.fold_in(init_rng, 1)}, dummy, train=False)
            target = target["params"]
        return TrainState(
            step=jnp.zeros((), jnp.int32),
            params=params,
            batch_stats=batch_stats,
            opt_state=tx.init(params),
            target_params=jax.tree.map(jnp.copy, target) if uses_target else {},
            target_batch_stats=jax.tree.map(jnp.copy, batch_stats) if uses_target else {},
            buffers=cast_rows(
                method.init_buffers(buffer_rng, ctx), method.buffer_specs(ctx), buffer_dtype
            ),
            rng=state_rng,
        )

    compiled = []

    def initialize(rng: jax.Array) -> TrainState:
        if not compiled:
            abstract = jax.eval_shape(init, rng)
            shardings = state_shardings(abstract, mesh, method.buffer_specs(ctx))
            compiled.append(jax.jit(init, out_shardings=shardings))
        return compiled[0](rng)

    return initialize
