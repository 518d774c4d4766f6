"""What a compiled step moves and keeps, read from its HLO text and XLA's analyses: the arrays its
collectives produce, their bytes, whether the state is donated. Used by `tests/test_hlo.py` and
`benchmarks/accelerator.py --readiness`; imports nothing of ssl_jax."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

COLLECTIVE = re.compile(
    r"^\s*%\S+ = (.*?) (all-gather|all-reduce|reduce-scatter|all-to-all|collective-permute)"
    r"(?:-start)?\("
)
BYTES = {"f32": 4, "s32": 4, "u32": 4, "bf16": 2, "f16": 2, "pred": 1, "s8": 1, "u8": 1}


def collectives(hlo: str) -> list[tuple[str, str, tuple[int, ...]]]:
    """(kind, dtype, shape) of every array a collective of the compiled HLO produces."""
    out = []
    for line in hlo.splitlines():
        m = COLLECTIVE.match(line)
        if m:
            for dtype, dims in re.findall(r"(\w+)\[([\d,]*)\]", m.group(1)):
                out.append((m.group(2), dtype, tuple(int(d) for d in dims.split(",") if d)))
    return out


def nbytes(dtype: str, shape: tuple[int, ...]) -> int:
    """Bytes of an HLO array `dtype[shape]` (dtype as HLO spells it: f32, bf16, s32, ...)."""
    return BYTES[dtype] * int(np.prod(shape, dtype=np.int64))


def moves_rows(
    moved, table_shape: tuple[int, ...], num_devices: int
) -> list[tuple[str, str, tuple[int, ...]]]:
    """The collectives of `moved` (from `collectives`) that carry a table of `table_shape` (a
    queue or bank sharded along its rows over `num_devices`) or one device's shard of it: an axis
    of its rows (or of a shard's) and at least a shard's elements."""
    rows, width = table_shape[0], int(np.prod(table_shape[1:], dtype=np.int64))
    shard = rows // num_devices
    return [
        c
        for c in moved
        if {rows, shard} & set(c[2]) and int(np.prod(c[2], dtype=np.int64)) >= shard * width
    ]


def one_device_bytes(tree: Any) -> int:
    """Bytes one device holds of a pytree of arrays or sharded `ShapeDtypeStruct`s."""
    import jax

    total = 0
    for x in jax.tree.leaves(tree):
        shape = x.sharding.shard_shape(x.shape) if hasattr(x, "sharding") else x.shape
        total += int(np.prod(shape, dtype=np.int64)) * np.dtype(x.dtype).itemsize
    return total


def donates_state(compiled: Any, state: Any) -> bool:
    """Every buffer of the (first) argument `state` aliases an output: XLA's aliased bytes equal one
    device's state bytes and the module declares input/output aliasing."""
    header = compiled.as_text().splitlines()[0]
    aliased = compiled.memory_analysis().alias_size_in_bytes
    return aliased == one_device_bytes(state) and "input_output_alias=" in header


def sharded_tables(buffers: Any) -> dict[str, tuple[int, ...]]:
    """Shapes of the leaves of `buffers` sharded along their rows (queues, banks), by path."""
    import jax

    out = {}
    for path, x in jax.tree_util.tree_leaves_with_path(buffers):
        spec = x.sharding.spec
        if x.ndim >= 2 and len(spec) and spec[0] is not None:
            out[jax.tree_util.keystr(path)] = tuple(x.shape)
    return out


def step_report(compiled: Any, state: Any, batch: Any) -> dict:
    """Figures of a compiled train step `(state, batch) → (state, metrics)` on n devices, per
    device: FLOPs (`cost_analysis`) and FLOPs per image, memory (`memory_analysis`), the bytes its
    collectives produce by kind, the queues/banks of `state.buffers` that a collective carries
    (`moves_rows`; empty when none does) and whether the state is donated. `state` and `batch` are
    the arrays or sharded `ShapeDtypeStruct`s it was lowered with."""
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list | tuple) else cost
    rows = batch["index"]  # one per image, whatever carries the pixels (views or canvases)
    n = len(rows.sharding.device_set)
    per_device = rows.shape[0] / n
    memory = compiled.memory_analysis()
    text = compiled.as_text()
    moved = collectives(text)
    by_kind: dict[str, int] = {}
    for kind, dtype, shape in moved:
        by_kind[kind] = by_kind.get(kind, 0) + nbytes(dtype, shape)
    tables = sharded_tables(state.buffers)
    carried = {p: moves_rows(moved, shape, n) for p, shape in tables.items()}
    return {
        "devices": n,
        "per_device_batch": per_device,
        "flops": float(cost["flops"]),
        "flops_per_image": float(cost["flops"]) / per_device,
        "peak_bytes": memory.peak_memory_in_bytes,
        "argument_bytes": memory.argument_size_in_bytes,
        "output_bytes": memory.output_size_in_bytes,
        "temp_bytes": memory.temp_size_in_bytes,
        "alias_bytes": memory.alias_size_in_bytes,
        "state_bytes": one_device_bytes(state),
        "param_bytes": one_device_bytes(state.params),
        "collective_bytes": sum(by_kind.values()),
        "collective_bytes_by_kind": by_kind,
        "largest_collective": max(moved, key=lambda c: nbytes(c[1], c[2])) if moved else None,
        "tables": tables,
        "tables_moved": {p: c for p, c in carried.items() if c},
        "donated": donates_state(compiled, state),
    }
