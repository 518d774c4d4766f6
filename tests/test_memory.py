"""Queue/bank ops on 8 simulated devices against plain numpy, and their sharded layout."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding

from ssl_jax.methods import memory
from ssl_jax.parallel.sharding import make_mesh


def _table(mesh, rows=64, dim=4, seed=0):
    return memory.init_rows(jax.random.PRNGKey(seed), rows, dim, mesh)


def test_table_is_sharded_not_replicated():
    mesh = make_mesh()
    table = _table(mesh)
    assert isinstance(table.sharding, NamedSharding)
    shard_rows = {s.data.shape[0] for s in table.addressable_shards}
    assert shard_rows == {64 // jax.device_count()}
    np.testing.assert_allclose(np.linalg.norm(np.asarray(table), axis=1), 1.0, rtol=1e-5)


def test_enqueue_matches_numpy_fifo_and_wraps():
    mesh = make_mesh()
    queue = _table(mesh)
    expected = np.asarray(queue).copy()
    ptr = jnp.int32(0)
    step = jax.jit(lambda q, p, k: memory.enqueue(q, p, k, mesh))
    rng = np.random.default_rng(0)
    for _ in range(5):  # 5 * 16 rows > 64: wraps around
        keys = rng.normal(size=(16, 4)).astype(np.float32)
        p = int(ptr)
        expected[p : p + 16] = keys
        queue, ptr = step(queue, ptr, jnp.asarray(keys))
    np.testing.assert_array_equal(np.asarray(queue), expected)
    assert int(ptr) == (5 * 16) % 64
    assert {s.data.shape[0] for s in queue.addressable_shards} == {64 // jax.device_count()}


def test_read_write_and_similarities():
    mesh = make_mesh()
    table = _table(mesh)
    t = np.asarray(table)
    idx = jnp.asarray([3, 63, 0, 17], jnp.int32)
    np.testing.assert_allclose(np.asarray(memory.read_rows(table, idx, mesh)), t[np.asarray(idx)])
    rows = np.arange(16, dtype=np.float32).reshape(4, 4)
    written = np.asarray(
        jax.jit(lambda a: memory.write_rows(a, idx, jnp.asarray(rows), mesh))(table)
    )
    t2 = t.copy()
    t2[np.asarray(idx)] = rows
    np.testing.assert_array_equal(written, t2)

    q = np.random.default_rng(1).normal(size=(4, 4)).astype(np.float32)
    cols = np.random.default_rng(2).integers(0, 64, size=(4, 7)).astype(np.int32)
    sims = memory.row_similarities(table, jnp.asarray(q), jnp.asarray(cols), mesh)
    np.testing.assert_allclose(
        np.asarray(sims), np.einsum("bd,bkd->bk", q, t[cols]), rtol=1e-5, atol=1e-6
    )

    # gradient w.r.t. the query equals the sum of the picked rows
    grad = jax.grad(lambda q: memory.row_similarities(table, q, jnp.asarray(cols), mesh).sum())(
        jnp.asarray(q)
    )
    np.testing.assert_allclose(np.asarray(grad), t[cols].sum(1), rtol=1e-5, atol=1e-6)
