"""Device mesh, batch sharding and host-local → global arrays.

One mesh axis, `data`, over all devices of all hosts. Batches are sharded `P('data')`; queues and memory
banks `P('data', None)` (see memory.py); everything else is replicated.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

DATA_AXIS = "data"


def make_mesh(devices=None) -> Mesh:
    """A 1-D mesh named `data` over `devices` (default: all devices of all processes)."""
    devices = jax.devices() if devices is None else devices
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
