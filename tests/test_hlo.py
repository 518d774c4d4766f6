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

import jax
import pytest

from ssl_jax import train
from ssl_jax.parallel import sharding
from ssl_jax.parallel.hlo import collectives, donates_state, moves_rows, nbytes, step_report
from tests.helpers import synthetic_batch, tiny_config

ROWS = 16384
TABLE = {"mocov2": "queue", "ir": "bank"}


def collective_bytes(hlo: str) -> int:
    """Bytes produced by all the collectives of one device's program (one step)."""
    return sum(nbytes(dtype, shape) for _, dtype, shape in collectives(hlo))


def _config(method):
    if method == "mocov2":
        return tiny_config("mocov2", queue_size=ROWS)
    config = tiny_config("ir", bank_size=ROWS)
    config.data.train_subset = ROWS
    return config


@pytest.fixture(scope="module", params=["mocov2", "ir"])
def compiled(request):
    method = request.param
    config = _config(method)
    exp = train.build_experiment(config)
    with jax.threefry_partitionable(False):  # a much cheaper init compile on CPU
        state = train.init_or_restore(exp, None)
    step = train.jit_train_step(exp, state)
    batch = sharding.host_to_global(synthetic_batch(config, 0), exp.mesh)
    return method, config, state, batch, step.lower(state, batch).compile()


@pytest.mark.slow
def test_collectives_never_move_the_queue_or_bank(compiled):
    method, config, state, _, exe = compiled
    table = state.buffers[TABLE[method]]
    assert table.shape[0] == ROWS
    moved = collectives(exe.as_text())
    assert moved, "an 8-device step has collectives"
    assert not moves_rows(moved, table.shape, 8)
    for kind, dtype, shape in moved:
        assert ROWS not in shape and ROWS // 8 not in shape, (kind, dtype, shape)
        if kind == "all-gather":  # per-example rows of the global batch only
            assert shape[0] == config.global_batch_size, (kind, dtype, shape)
    total = collective_bytes(exe.as_text())
    params = sum(x.nbytes for x in jax.tree.leaves(state.params))
    assert total < 1.5 * params, (total, params)
    assert table.nbytes >= params, "the table must be big enough for the bound to mean something"


@pytest.mark.slow
def test_state_is_donated(compiled):
    _, _, state, _, exe = compiled
    one_device = sum(x.addressable_shards[0].data.nbytes for x in jax.tree.leaves(state))
    assert exe.memory_analysis().alias_size_in_bytes == one_device
    assert "input_output_alias={ {0}: (0, {}, may-alias)" in exe.as_text().splitlines()[0]
    assert donates_state(exe, state)


@pytest.mark.slow
def test_step_report(compiled):
    """`hlo.step_report` (what `benchmarks/accelerator.py --readiness` prints) on the same step."""
    method, config, state, batch, exe = compiled
    r = step_report(exe, state, batch)
    table = state.buffers[TABLE[method]]
    assert r["devices"] == 8 and r["per_device_batch"] == config.global_batch_size / 8
    assert r["tables"] == {f"['{TABLE[method]}']": table.shape} and r["tables_moved"] == {}
    assert r["donated"] and r["alias_bytes"] == r["state_bytes"]
    assert r["collective_bytes"] == collective_bytes(exe.as_text()) > r["param_bytes"] / 2
    assert r["flops_per_image"] > 0 and r["peak_bytes"] > 0


@pytest.mark.slow
def test_device_crops_step_keeps_canvases_on_their_devices():
    """With `data.device_crops` the batch is canvases + crop boxes (`TrainInput.abstract_batch`): the
    8-device step cuts each device's views locally; no collective carries a canvas (an axis of the
    canvas side), and `step_report` reads the batch size from its rows."""
    side = 40  # a size no parameter or activation of the tiny model has
    config = tiny_config("mocov2", queue_size=ROWS)
    config.data.device_ops = True
    config.data.device_crops = side
    exp = train.build_experiment(config)
    state, batch = train.abstract_state(exp), exp.input.abstract_batch()
    assert set(batch) == {"canvas", "boxes", "flips", "index", "label"}
    assert batch["canvas"].shape == (config.global_batch_size, side, side, 1)
    exe = train.jit_train_step(exp, state).lower(state, batch).compile()
    moved = collectives(exe.as_text())
    assert moved and all(side not in shape for _, _, shape in moved), moved
    r = step_report(exe, state, batch)
    assert r["per_device_batch"] == config.global_batch_size / 8 and r["donated"]
