"""What the compiled step moves and keeps, read from its HLO (issue 18 item 3, the cheap part): the
tiny MoCo v2 (queue) and IR (bank) steps on 8 devices, with a queue / bank of 16,384 rows (a size
nothing else in the step has).

- Collectives never move the queue or bank: no collective has an axis of its rows (16,384) or of one
  device's shard (2,048); all-gathers move only per-example rows of the global batch (keys, sampled
  indices); all collectives together move less than 1.5× the parameters' bytes (the gradients and BN
  statistics), while the table alone is 1 MiB.
- The state is donated: every state buffer aliases an output (`memory_analysis().alias_size_in_bytes`
  equals one device's state bytes).
"""

import re

import jax
import numpy as np
import pytest

from ssl_jax import sharding, train
from tests.helpers import synthetic_batch, tiny_config

ROWS = 16384
TABLE = {"mocov2": "queue", "ir": "bank"}
COLLECTIVE = re.compile(
    r"^\s*%\S+ = (.*?) (all-gather|all-reduce|reduce-scatter|all-to-all|collective-permute)"
    r"(?:-start)?\("
)
BYTES = {"f32": 4, "s32": 4, "u32": 4, "bf16": 2, "f16": 2, "pred": 1, "s8": 1, "u8": 1}


def _config(method):
    if method == "mocov2":
        return tiny_config("mocov2", queue_size=ROWS)
    config = tiny_config("ir", bank_size=ROWS)
    config.data.train_subset = ROWS
    return config


def collectives(hlo: str) -> list[tuple[str, str, tuple[int, ...]]]:
    """(kind, dtype, shape) of every array a collective of the compiled HLO produces."""
    out = []
    for line in hlo.splitlines():
        m = COLLECTIVE.match(line)
        if m:
            for dtype, dims in re.findall(r"(\w+)\[([\d,]*)\]", m.group(1)):
                out.append((m.group(2), dtype, tuple(int(d) for d in dims.split(",") if d)))
    return out


@pytest.fixture(scope="module", params=["mocov2", "ir"])
def compiled(request):
    method = request.param
    config = _config(method)
    exp = train.build_experiment(config)
    with jax.threefry_partitionable(False):  # a much cheaper init compile on CPU
        state = train.init_or_restore(exp, None)
    step = train.jit_train_step(exp, state)
    batch = sharding.host_to_global(synthetic_batch(config, 0), exp.mesh)
    return method, config, state, step.lower(state, batch).compile()


def _nbytes(dtype, shape):
    return BYTES[dtype] * int(np.prod(shape, dtype=np.int64))


@pytest.mark.slow
def test_collectives_never_move_the_queue_or_bank(compiled):
    method, config, state, exe = compiled
    table = state.buffers[TABLE[method]]
    assert table.shape[0] == ROWS
    moved = collectives(exe.as_text())
    assert moved, "an 8-device step has collectives"
    for kind, dtype, shape in moved:
        assert ROWS not in shape and ROWS // 8 not in shape, (kind, dtype, shape)
        if kind == "all-gather":  # per-example rows of the global batch only
            assert shape[0] == config.global_batch_size, (kind, dtype, shape)
    total = sum(_nbytes(dtype, shape) for _, dtype, shape in moved)
    params = sum(x.nbytes for x in jax.tree.leaves(state.params))
    assert total < 1.5 * params, (total, params)
    assert table.nbytes >= params, "the table must be big enough for the bound to mean something"


@pytest.mark.slow
def test_state_is_donated(compiled):
    _, _, state, exe = compiled
    one_device = sum(x.addressable_shards[0].data.nbytes for x in jax.tree.leaves(state))
    assert exe.memory_analysis().alias_size_in_bytes == one_device
    assert "input_output_alias={ {0}: (0, {}, may-alias)" in exe.as_text().splitlines()[0]
