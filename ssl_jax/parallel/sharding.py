"""Device mesh, batch sharding and host-local → global arrays.

One mesh axis, `data`, over all devices of all hosts. Batches are sharded `P('data')`; queues and memory
banks `P('data', None)` (see memory.py); everything else is replicated.
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Iterable, Iterator

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

DATA_AXIS = "data"


def make_mesh(devices=None) -> Mesh:
    """A 1-D mesh named `data` over `devices` (default: all devices of all processes).

    Built by `jax.make_mesh`, which orders the devices by the physical topology (a ring on TPU pods);
    `Auto` axis type, as the rest of the library's `NamedSharding`s expect. An explicit device list
    (tests) is passed through, falling back to `Mesh(devices)` where `jax.make_mesh` cannot take it.
    """
    devices = jax.devices() if devices is None else list(devices)
    try:
        return jax.make_mesh(
            (len(devices),), (DATA_AXIS,), axis_types=(AxisType.Auto,), devices=devices
        )
    except (TypeError, ValueError):  # older jax without `devices=`, or a list it cannot lay out
        return Mesh(np.asarray(devices), (DATA_AXIS,))


def batch_sharding(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P(DATA_AXIS))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, P())


def host_to_global(batch, mesh: Mesh):
    """Host-local numpy batch (leading axis = this process's examples) → global arrays sharded `P('data')`.

    The same code runs on one host or many: each process passes only its own slice of the global batch.
    """
    sharding = batch_sharding(mesh)
    return jax.tree.map(
        lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), batch
    )


def prefetch_to_device(iterator: Iterable, size: int, mesh: Mesh) -> Iterator:
    """Host-local batches → global arrays (`host_to_global`), keeping `size` batches already
    transferred ahead of the one handed out (big_vision's `prefetch_iterator`): the copies of the
    next batches run while the device computes the current step. `size=0`: no read-ahead.

    The transfers are explicit (`jax.make_array_from_process_local_data`), so a step fed from here
    runs under `jax.transfer_guard('disallow')`.
    """
    iterator = iter(iterator)
    if size <= 0:
        yield from (host_to_global(batch, mesh) for batch in iterator)
        return
    queue: collections.deque = collections.deque()

    def enqueue(n: int) -> None:
        for batch in itertools.islice(iterator, n):
            queue.append(host_to_global(batch, mesh))

    enqueue(size)
    while queue:
        batch = queue.popleft()
        enqueue(1)  # before handing the batch out: `size` transfers run during its step
        yield batch
