"""Mixed precision (issue 18 item 2): `model.dtype='bfloat16'` computes convs and matmuls in bf16
while parameters, optimiser state, BN statistics, losses and checkpoints stay float32;
`buffer_dtype='bfloat16'` keeps the queue / bank in bf16 through the steps.

The tracking test trains the tiny MoCo v2 (ResNet-18 width 1/8, 16-px views, batch 16, the first 64
Fashion-MNIST training images, queue 64) for 50 steps on one device in float32 and in bfloat16
(compute, and the queue in bf16) from the same initial parameters on the same batches, and checks
that the bf16 loss follows the f32 loss (~4): step 0 within `FIRST_ATOL`, every step within
`TRACK_ATOL`, the mean of the last 10 steps within `MEAN_ATOL`.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ssl_jax import checkpoint, configs, models, state, train, validation
from ssl_jax.data import pipeline
from ssl_jax.parallel import sharding
from tests.helpers import tiny_config

STEPS = 50
FIRST_ATOL = 0.02  # step 0: same parameters, same batch; only bf16 rounding
TRACK_ATOL = 0.3  # every step (the trajectories drift apart slowly), on a loss of ~4
MEAN_ATOL = 0.1  # mean of the last 10 steps (2.5 %)


@pytest.fixture(scope="module")
def batches():
    """The first STEPS batches of the tiny config's Fashion-MNIST pipeline (host numpy)."""
    config = tiny_config("mocov2")
    data = pipeline.train_iterator(config)
    return [next(data) for _ in range(STEPS)]


def _experiment(*overrides):
    config = tiny_config("mocov2")
    config.total_steps = STEPS
    config.optim.base_lr = 0.05
    for item in overrides:
        configs.apply_override(config, item)
    return train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))


def _run(exp, init, batches, workdir):
    """STEPS steps from `init` (host arrays) → (final state, losses); the final state saved in
    `workdir`."""
    queue_dtype = state.BUFFER_DTYPES[exp.config.buffer_dtype]
    specs = exp.method.buffer_specs(exp.ctx)
    init = init.replace(buffers=state.cast_rows(init.buffers, specs, queue_dtype))
    shardings = state.state_shardings(init, exp.mesh, specs)
    state_ = jax.device_put(init, shardings)
    step = train.jit_train_step(exp, state_)
    losses = []
    for batch in batches:
        state_, metrics = step(state_, sharding.host_to_global(batch, exp.mesh))
        losses.append(metrics["train/loss"])
    ckpt = checkpoint.Checkpointer(workdir)
    ckpt.save(state_, force=True)
    ckpt.wait()
    ckpt.close()
    return state_, np.asarray(jax.device_get(losses), np.float64)


@pytest.fixture(scope="module")
def runs(batches, tmp_path_factory):
    """Both runs from one initial state (one init compile: the bf16 run's differs only in its
    queue's dtype, `state.cast_rows` as `create_train_state` does)."""
    tmp = tmp_path_factory.mktemp("mixed")
    f32_exp = _experiment()
    bf16_exp = _experiment("model.dtype=bfloat16", "buffer_dtype=bfloat16")
    with jax.threefry_partitionable(False):  # a much cheaper init compile on CPU
        init = jax.device_get(train.init_or_restore(f32_exp, None))
    f32 = _run(f32_exp, init, batches, str(tmp / "f32"))
    bf16 = _run(bf16_exp, init, batches, str(tmp / "bf16"))
    return f32, bf16, str(tmp / "bf16")


@pytest.mark.slow
def test_bf16_loss_tracks_f32(runs):
    (_, f32), (_, bf16), _ = runs
    assert len(f32) == len(bf16) == STEPS
    assert np.all(np.isfinite(bf16))
    diff = np.abs(bf16 - f32)
    print(
        f"step 0 {f32[0]:.4f} vs {bf16[0]:.4f}; max |bf16 - f32| {diff.max():.4f}; "
        f"last-10 means {f32[-10:].mean():.4f} vs {bf16[-10:].mean():.4f}"
    )
    assert diff[0] < FIRST_ATOL, diff[0]
    assert diff.max() < TRACK_ATOL, diff
    assert abs(bf16[-10:].mean() - f32[-10:].mean()) < MEAN_ATOL


@pytest.mark.slow
def test_bf16_state_and_checkpoint_stay_float32(runs):
    _, (final, _), workdir = runs
    leaves = jax.tree.leaves(
        (final.params, final.batch_stats, final.opt_state, final.target_params)
    )
    assert {np.dtype(x.dtype) for x in leaves if jnp.issubdtype(x.dtype, jnp.floating)} == {
        np.dtype(np.float32)
    }
    assert final.buffers["queue"].dtype == jnp.bfloat16  # kept through 50 buffer updates
    stored = checkpoint.metadata_tree(os.path.join(workdir, "checkpoints", str(STEPS)))
    params = jax.tree.leaves(stored["params"], is_leaf=lambda x: hasattr(x, "dtype"))
    assert params and {np.dtype(x.dtype) for x in params} == {np.dtype(np.float32)}
    assert np.dtype(stored["buffers"]["queue"].dtype) == jnp.bfloat16


def test_auto_dtype_follows_the_backend(monkeypatch):
    assert models.resolve_dtype("auto") == "float32"  # the tests run on CPU
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert models.resolve_dtype("auto") == "bfloat16"
    config = configs.load("configs/mocov2_imagenet.py")
    assert config.model.dtype == "auto"
    assert models.backbone_only(config.model).dtype == jnp.bfloat16
    assert configs.load("configs/mocov2_imagenet.py:runlocal").model.dtype == "float32"


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("buffer_dtype", "float16", r"config\.buffer_dtype='float16'.*\['float32', 'bfloat16'\]"),
        ("model.dtype", "fp16", r"config\.model\.dtype='fp16'.*'auto'"),
    ],
)
def test_bad_dtype_rejected_before_compile(key, value, message):
    config = tiny_config()
    configs.apply_override(config, f"{key}={value}")
    with pytest.raises(configs.ConfigError, match=message):
        validation.validate(config, num_devices=8)


def test_cast_rows_only_touches_sharded_float_tables():
    from jax.sharding import PartitionSpec as P

    from ssl_jax.methods import memory

    buffers = {
        "queue": jnp.ones((8, 4)),
        "ptr": jnp.zeros((), jnp.int32),
        "labels": jnp.zeros((8,), jnp.int32),
        "centroids": jnp.ones((3, 4)),
    }
    specs = {"queue": memory.ROWS, "ptr": P(), "labels": P("data"), "centroids": P()}
    out = state.cast_rows(buffers, specs, jnp.bfloat16)
    dtypes = {k: v.dtype for k, v in out.items()}
    assert dtypes == {
        "queue": jnp.bfloat16,
        "ptr": jnp.int32,
        "labels": jnp.int32,
        "centroids": jnp.float32,
    }
    assert state.cast_rows(buffers, specs, jnp.float32) is buffers
