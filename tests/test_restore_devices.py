"""Restore on another device count: a run saved after 2 steps on 8 devices resumes on 4 and on 1 (and
one saved on 1 resumes on 8) with the uninterrupted run's step 3.

Tiny MoCo v2 (a queue, shuffle-BN over key groups of 4 images) and IR (a memory bank): their queue /
bank is sharded `P('data')` and orbax reshards it into the new mesh; BN groups are counted in images,
so no method semantics depend on the device count. Step 3 agrees to float tolerance only (rtol 2e-4,
as `test_train.py::test_one_vs_eight_devices`): the gradient and BN-statistic sums are reduced over
another number of devices, in another order. The restored state itself is bit-identical.

One experiment and one compiled step per (method, device count), shared by the module (IR is not
restored on 4: one compile less, the bank reshards as the queue does); the initial
states are drawn with non-partitionable threefry (a much cheaper init compile on CPU; the same bits on
1 and 8 devices).
"""

import jax
import numpy as np
import pytest

from ssl_jax import checkpoint, train
from ssl_jax.parallel import sharding
from tests.helpers import synthetic_batch, tiny_config

METHODS = ("mocov2", "ir")
TABLE = {"mocov2": "queue", "ir": "bank"}
TOL = dict(rtol=2e-4, atol=1e-5)


def _config(method):
    config = tiny_config(method)
    config.optim.base_lr = 0.01  # a gentle step: large ones amplify float reduction-order noise
    return config


class _Runs:
    """Per (method, n): the experiment on `jax.devices()[:n]` and its jitted step (compiled once)."""

    def __init__(self):
        self.exps, self.steps = {}, {}

    def exp(self, method, n):
        if (method, n) not in self.exps:
            mesh = sharding.make_mesh(jax.devices()[:n])
            self.exps[method, n] = train.build_experiment(_config(method), mesh=mesh)
        return self.exps[method, n]

    def step(self, method, n, state, batch_step):
        exp = self.exp(method, n)
        if (method, n) not in self.steps:
            self.steps[method, n] = train.jit_train_step(exp, state)
        batch = sharding.host_to_global(synthetic_batch(exp.config, batch_step), exp.mesh)
        return self.steps[method, n](state, batch)


@pytest.fixture(scope="module")
def runs():
    return _Runs()


@pytest.fixture(scope="module")
def straight(runs, tmp_path_factory):
    """(method, n) → (workdir with the step-2 checkpoint, host state after 2 steps, step-3 loss) of an
    uninterrupted 3-step run on n ∈ {8, 1} devices."""
    out = {}
    for method in METHODS:
        for n in (8, 1):
            workdir = str(tmp_path_factory.mktemp(f"{method}_{n}"))
            ckpt = checkpoint.Checkpointer(workdir)
            with jax.threefry_partitionable(False):  # a much cheaper init compile on CPU
                state = train.init_or_restore(runs.exp(method, n), None)
            for i in range(2):
                state, _ = runs.step(method, n, state, i)
            ckpt.save(state, force=True)
            ckpt.wait()
            ckpt.close()
            saved = jax.device_get(state)
            state, metrics = runs.step(method, n, state, 2)
            out[method, n] = (workdir, saved, float(metrics["train/loss"]))
    return out


@pytest.mark.parametrize(
    ("method", "saved_on", "restored_on"),
    [("mocov2", 8, 4), ("mocov2", 8, 1), ("mocov2", 1, 8), ("ir", 8, 1), ("ir", 1, 8)],
)
def test_resume_on_another_device_count(runs, straight, method, saved_on, restored_on):
    workdir, saved, _ = straight[method, saved_on]
    exp = runs.exp(method, restored_on)
    ckpt = checkpoint.Checkpointer(workdir, create=False)
    state = train.init_or_restore(exp, ckpt)
    ckpt.close()
    assert int(state.step) == 2
    # the state comes back bit-identical, in the new mesh's layout: 1/n of the rows per device
    for a, b in zip(jax.tree.leaves(jax.device_get(state)), jax.tree.leaves(saved)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    table = state.buffers[TABLE[method]]
    assert table.sharding.mesh.size == restored_on
    assert {s.data.shape[0] for s in table.addressable_shards} == {table.shape[0] // restored_on}
    _, metrics = runs.step(method, restored_on, state, 2)
    # step 3 as the uninterrupted run(s) on 8 (and 1) devices
    for n in {saved_on, restored_on} & {8, 1}:
        np.testing.assert_allclose(float(metrics["train/loss"]), straight[method, n][2], **TOL)


def test_resume_on_a_device_count_that_does_not_divide_the_queue(runs, straight):
    """A queue of 64 rows cannot be sharded over 3 devices: a CheckpointError says so (the config
    check refuses the batch first in `build_experiment`; the restore check guards direct callers)."""
    workdir, _, _ = straight["mocov2", 8]
    exp = runs.exp("mocov2", 8)
    mesh3 = sharding.make_mesh(jax.devices()[:3])
    state = jax.eval_shape(lambda: train.init_or_restore(exp, None))
    shardings = train.state_shardings(state, mesh3, exp.method.buffer_specs(exp.ctx))
    abstract = jax.tree.map(
        lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), state, shardings
    )
    ckpt = checkpoint.Checkpointer(workdir, create=False)
    with pytest.raises(checkpoint.CheckpointError, match="on 3 devices: buffers/queue has 64 rows"):
        ckpt.restore(abstract)
    ckpt.close()
