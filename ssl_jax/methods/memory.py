"""Queues and memory banks as pure functions on arrays sharded along their length over `data`.

A queue `[K, D]` (MoCo, SCE, JCL, Ring) and a bank `[N, D]` indexed by example id (IR, CMC, InterCLR) are
sharded `P('data', None)`: each of n devices holds K/n (N/n) consecutive rows and nothing is ever
replicated. Writes and reads go through `shard_map`: the global batch of keys (small) is visible on every
device, and each device touches only the rows it owns, so the global layout is the same on 1 or n devices.
Searching a bank by similarity (top-k, quantiles, sampling in a band) is `methods/negatives/bank_search`.

The public functions here (and in `methods/negatives/`) are `jax.jit`-ted with their sizes, flags and
mesh static: inside a train step they inline; called eagerly (tests, set-up code, notebooks) they
compile once per shape instead of running their `shard_map` op by op, several times slower on CPU
(docs/performance.md).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ssl_jax.methods.losses import (
    l2_normalize,  # the one definition (memory.l2_normalize is the same)
)
from ssl_jax.parallel.sharding import DATA_AXIS

ROWS = P(DATA_AXIS, None)


def init_rows(
    rng: jax.Array, num_rows: int, dim: int, mesh: Mesh, normalize: bool = True
) -> jax.Array:
    """`random_rows` created directly in its sharded layout (never whole on one device)."""
    if num_rows % mesh.size:
        raise ValueError(f"{num_rows} rows cannot be split evenly over {mesh.size} devices")

    def make(rng):
        return random_rows(rng, num_rows, dim, normalize)

    return jax.jit(make, out_shardings=NamedSharding(mesh, ROWS))(rng)


def _local_index(
    global_index: jnp.ndarray, rows_per_device: int
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Global row ids → (this device's local row ids, mask of rows this device owns)."""
    start = lax.axis_index(DATA_AXIS) * rows_per_device
    local = global_index - start
    owned = (local >= 0) & (local < rows_per_device)
    return local, owned


def rows_per_device(bank: jax.Array, mesh: Mesh) -> tuple[int, int]:
    """(devices along `data`, rows each holds) of a table sharded `ROWS`; uneven splits raise."""
    num_devices = mesh.shape[DATA_AXIS]
    if bank.shape[0] % num_devices:
        raise ValueError(f"{bank.shape[0]} rows cannot be split evenly over {num_devices} devices")
    return num_devices, bank.shape[0] // num_devices


def rows_spec(table: jax.Array) -> P:
    """`P('data', None, ...)` for a table of any rank sharded along its first axis (a bank `[N, D]`,
    a label bank `[N]`)."""
    return P(DATA_AXIS, *([None] * (table.ndim - 1)))


@functools.partial(jax.jit, static_argnames=("mesh",))
def write_rows(table: jax.Array, index: jnp.ndarray, rows: jnp.ndarray, mesh: Mesh) -> jax.Array:
    """table[index] = rows, each device writing only the rows it owns. index `[B]` int, rows
    `[B, *table.shape[1:]]` (a bank `[N, D]` or a label bank `[N]`)."""

    def write(local_table, index, rows):
        local, owned = _local_index(index, local_table.shape[0])
        local = jnp.where(owned, local, local_table.shape[0])  # out of bounds → dropped
        return local_table.at[local].set(rows.astype(local_table.dtype), mode="drop")

    spec = rows_spec(table)
    return jax.shard_map(write, mesh=mesh, in_specs=(spec, P(), P()), out_specs=spec)(
        table, index, lax.stop_gradient(rows)
    )


@functools.partial(jax.jit, static_argnames=("mesh",))
def read_rows(table: jax.Array, index: jnp.ndarray, mesh: Mesh) -> jnp.ndarray:
    """table[index] `[*index.shape, *table.shape[1:]]`, gathered from the owning devices (masked
    local gather + psum)."""

    def read(local_table, index):
        local, owned = _local_index(index, local_table.shape[0])
        got = local_table[jnp.clip(local, 0, local_table.shape[0] - 1)]
        owned = owned.reshape(owned.shape + (1,) * (got.ndim - owned.ndim))
        return lax.psum(jnp.where(owned, got, 0), DATA_AXIS)

    return jax.shard_map(read, mesh=mesh, in_specs=(rows_spec(table), P()), out_specs=P())(
        table, index
    )


@functools.partial(jax.jit, static_argnames=("mesh",))
def row_similarities(
    table: jax.Array, query: jnp.ndarray, index: jnp.ndarray, mesh: Mesh
) -> jnp.ndarray:
    """`[B, M]` with entry (b, j) = query[b] · table[index[b, j]]; differentiable in `query`.

    Each device multiplies the queries with its own rows (`[B, N/n]`), picks the requested entries it
    owns and the partial results are summed: the table never leaves its devices.
    """

    def sims(local_table, query, index):
        local_sims = query.astype(jnp.float32) @ local_table.astype(jnp.float32).T  # [B, N/n]
        local, owned = _local_index(index, local_table.shape[0])
        picked = jnp.take_along_axis(
            local_sims, jnp.clip(local, 0, local_table.shape[0] - 1), axis=1
        )
        return lax.psum(jnp.where(owned, picked, 0.0), DATA_AXIS)

    return jax.shard_map(sims, mesh=mesh, in_specs=(ROWS, P(), P()), out_specs=P())(
        lax.stop_gradient(table), query, index
    )


@functools.partial(jax.jit, static_argnames=("mesh",))
def enqueue(
    queue: jax.Array, ptr: jnp.ndarray, keys: jnp.ndarray, mesh: Mesh
) -> tuple[jax.Array, jnp.ndarray]:
    """FIFO write of the global batch of keys `[B, D]` at rows ptr..ptr+B; returns (queue, new ptr).

    Requires K % B == 0 (checked by the method's config validation), as the official MoCo code asserts.
    """
    size, batch = queue.shape[0], keys.shape[0]
    index = ptr + jnp.arange(batch, dtype=jnp.int32)
    return write_rows(queue, index, keys, mesh), ((ptr + batch) % size).astype(jnp.int32)


ROW_INITS = ("normal", "uniform")


def random_rows(
    rng: jax.Array, num_rows: int, dim: int, normalize: bool = True, init: str = "normal"
) -> jnp.ndarray:
    """`[num_rows, dim]` random rows, L2-normalised unless `normalize=False`: `init='normal'` draws
    `randn` (MoCo's `queue`), `'uniform'` draws U(−s, s) with s = 1/√(dim/3), `torch.rand(N, d)·2s −
    s` (lemniscate's and CMC's `NCEAverage` memory, not normalised; the Ring code's `MemoryBank`,
    normalised). Call inside a jit whose out_shardings shard it (no full copy)."""
    if init == "normal":
        x = jax.random.normal(rng, (num_rows, dim), jnp.float32)
    elif init == "uniform":
        s = 1.0 / math.sqrt(dim / 3)
        x = jax.random.uniform(rng, (num_rows, dim), jnp.float32, -s, s)
    else:
        raise ValueError(f"init={init!r}; allowed: {ROW_INITS}")
    return l2_normalize(x) if normalize else x
