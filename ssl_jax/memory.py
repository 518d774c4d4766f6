"""Queues and memory banks as pure functions on arrays sharded along their length over `data`.

A queue `[K, D]` (MoCo, SCE, JCL, Ring) and a bank `[N, D]` indexed by example id (IR, CMC, InterCLR) are
sharded `P('data', None)`: each of n devices holds K/n (N/n) consecutive rows and nothing is ever
replicated. Writes and reads go through `shard_map`: the global batch of keys (small) is visible on every
device, and each device touches only the rows it owns, so the global layout is the same on 1 or n devices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ssl_jax.losses import l2_normalize  # the one definition (memory.l2_normalize is the same)
from ssl_jax.sharding import DATA_AXIS

ROWS = P(DATA_AXIS, None)


def init_rows(
    rng: jax.Array, num_rows: int, dim: int, mesh: Mesh, normalize: bool = True
) -> jax.Array:
    """`normalize(randn(num_rows, dim))` created directly in its sharded layout (never whole on one device)."""
    if num_rows % mesh.size:
        raise ValueError(f"{num_rows} rows cannot be split evenly over {mesh.size} devices")

    def make(rng):
        x = jax.random.normal(rng, (num_rows, dim), jnp.float32)
        return l2_normalize(x) if normalize else x

    return jax.jit(make, out_shardings=NamedSharding(mesh, ROWS))(rng)


def _local_index(
    global_index: jnp.ndarray, rows_per_device: int
) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Global row ids → (this device's local row ids, mask of rows this device owns)."""
    start = lax.axis_index(DATA_AXIS) * rows_per_device
    local = global_index - start
    owned = (local >= 0) & (local < rows_per_device)
    return local, owned


def write_rows(table: jax.Array, index: jnp.ndarray, rows: jnp.ndarray, mesh: Mesh) -> jax.Array:
    """table[index] = rows, each device writing only the rows it owns. index `[B]` int, rows `[B, D]`."""

    def write(local_table, index, rows):
        local, owned = _local_index(index, local_table.shape[0])
        local = jnp.where(owned, local, local_table.shape[0])  # out of bounds → dropped
        return local_table.at[local].set(rows.astype(local_table.dtype), mode="drop")

    return jax.shard_map(write, mesh=mesh, in_specs=(ROWS, P(), P()), out_specs=ROWS)(
        table, index, lax.stop_gradient(rows)
    )


def read_rows(table: jax.Array, index: jnp.ndarray, mesh: Mesh) -> jnp.ndarray:
    """table[index] `[*index.shape, D]`, gathered from the owning devices (masked local gather + psum)."""

    def read(local_table, index):
        local, owned = _local_index(index, local_table.shape[0])
        got = local_table[jnp.clip(local, 0, local_table.shape[0] - 1)]
        return lax.psum(jnp.where(owned[..., None], got, 0), DATA_AXIS)

    return jax.shard_map(read, mesh=mesh, in_specs=(ROWS, P()), out_specs=P())(table, index)


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


def enqueue(
    queue: jax.Array, ptr: jnp.ndarray, keys: jnp.ndarray, mesh: Mesh
) -> tuple[jax.Array, jnp.ndarray]:
    """FIFO write of the global batch of keys `[B, D]` at rows ptr..ptr+B; returns (queue, new ptr).

    Requires K % B == 0 (checked by the method's config validation), as the official MoCo code asserts.
    """
    size, batch = queue.shape[0], keys.shape[0]
    index = ptr + jnp.arange(batch, dtype=jnp.int32)
    return write_rows(queue, index, keys, mesh), ((ptr + batch) % size).astype(jnp.int32)


def random_rows(rng: jax.Array, num_rows: int, dim: int, normalize: bool = True) -> jnp.ndarray:
    """`normalize(randn(num_rows, dim))`; call inside a jit whose out_shardings shard it (no full copy)."""
    x = jax.random.normal(rng, (num_rows, dim), jnp.float32)
    return l2_normalize(x) if normalize else x
