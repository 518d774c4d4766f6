"""The train step on 1 vs 8 devices, sharded buffers, validation and failure handling."""

import re

import jax
import numpy as np
import pytest

from ssl_jax import configs, run_control, train
from ssl_jax.parallel import sharding
from tests.helpers import synthetic_batch, tiny_config


def _run_steps(config, devices, steps=3):
    mesh = sharding.make_mesh(devices)
    exp = train.build_experiment(config, mesh=mesh)
    state = train.init_or_restore(exp, None)
    step = train.jit_train_step(exp, state)
    losses = []
    for i in range(steps):
        state, metrics = step(state, sharding.host_to_global(synthetic_batch(config, i), mesh))
        losses.append(float(metrics["train/loss"]))
    return state, losses


@pytest.mark.parametrize("method", ["mocov2", "ir"])
def test_one_vs_eight_devices(method):
    assert jax.device_count() == 8
    config = tiny_config(method)
    config.optim.base_lr = 0.01  # a gentle step: large ones amplify float reduction-order noise
    state1, losses1 = _run_steps(config, jax.devices()[:1])
    state8, losses8 = _run_steps(config, jax.devices())
    np.testing.assert_allclose(losses1, losses8, rtol=2e-4, atol=1e-5)
    for a, b in zip(jax.tree.leaves(state1.params), jax.tree.leaves(state8.params)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-3, atol=2e-5)
    for name in state1.buffers:
        np.testing.assert_allclose(
            np.asarray(state1.buffers[name]), np.asarray(state8.buffers[name]), rtol=2e-3, atol=2e-5
        )
    table = state8.buffers["queue" if method == "mocov2" else "bank"]
    rows = {s.data.shape[0] for s in table.addressable_shards}
    assert rows == {table.shape[0] // 8}, "each device must hold 1/8 of the rows"


def test_queue_receives_keys_in_fifo_order():
    config = tiny_config("mocov2")
    state, _ = _run_steps(config, jax.devices(), steps=2)
    assert int(state.buffers["queue_ptr"]) == 2 * config.global_batch_size
    queue = np.asarray(state.buffers["queue"])
    np.testing.assert_allclose(np.linalg.norm(queue, axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (lambda c: setattr(c, "global_batch_size", 12), "global_batch_size=12"),
        (lambda c: c.method_config.update(queue_size=72), "queue_size=72"),
        (
            lambda c: setattr(c, "method_config", type(c.method_config)({"temperature": "hot"})),
            "temperature",
        ),
        (lambda c: setattr(c, "method", "nope"), "allowed values"),
        (lambda c: setattr(c.model, "backbone", "resnet101"), "model.backbone"),
        (lambda c: setattr(c.model, "conv_impl", "fft"), "model.conv_impl"),
    ],
)
def test_bad_configs_fail_before_compiling(override, message):
    config = tiny_config("mocov2")
    override(config)
    with pytest.raises(configs.ConfigError, match=message):
        train.build_experiment(config)


def test_unknown_method_key_is_named():
    config = tiny_config("mocov2")
    config.method_config.quue_size = 64
    with pytest.raises(configs.ConfigError, match="quue_size"):
        train.build_experiment(config)


def test_bank_must_match_dataset_size():
    config = tiny_config("ir", bank_size=100)
    with pytest.raises(configs.ConfigError, match="bank_size=100.*64"):
        train.build_experiment(config)


def test_a_validated_config_is_not_checked_again(monkeypatch):
    """`main` validates and hands the result down (`validated=`): the experiment checks nothing
    again and takes the method's hparams from it; a result made for another config (or one changed
    since) is refused, a caller's mistake."""
    from ssl_jax import validation

    config = tiny_config("mocov2")
    checked = validation.validate(config, num_devices=jax.device_count())
    calls = []
    monkeypatch.setattr(validation, "validate", lambda *a, **k: calls.append(a))
    exp = train.build_experiment(config, validated=checked)
    assert calls == [] and exp.ctx.hp is checked.hparams and exp.validated is checked
    with pytest.raises(ValueError, match="made for another config"):
        train.build_experiment(tiny_config("mocov2"), validated=checked)
    config.method_config.temperature = 0.3
    with pytest.raises(ValueError, match="changed after validation"):
        train.build_experiment(config, validated=checked)


def test_a_batch_larger_than_the_split_fails_before_the_workdir_exists(tmp_path):
    config = tiny_config("mocov2", queue_size=128)
    config.global_batch_size = 128  # the tiny config's split: 64 images
    with pytest.raises(configs.ConfigError, match="global_batch_size=128 exceeds the 64 training"):
        train.train_and_evaluate(config, str(tmp_path / "run"))
    assert not (tmp_path / "run").exists()


RESUME_STEPS = 6


def _losses_by_step(workdir):
    from ssl_jax.output.writers import read_metrics

    return {r["step"]: r["train/loss"] for r in read_metrics(workdir) if "train/loss" in r}


def test_prefetched_steps_make_no_implicit_transfer():
    """Batches from `prefetch_to_device` and metrics read with `jax.device_get`: the jitted step runs
    under `transfer_guard('disallow')` (a host batch passed straight in is refused)."""
    config = tiny_config("mocov2")
    mesh = sharding.make_mesh()
    exp = train.build_experiment(config, mesh=mesh)
    state = train.init_or_restore(exp, None)
    step = train.jit_train_step(exp, state)
    host = (synthetic_batch(config, i) for i in range(4))
    batches = sharding.prefetch_to_device(host, 2, mesh)
    losses = []
    with jax.transfer_guard("disallow"):
        for batch in batches:
            assert batch["views"][0].sharding == sharding.batch_sharding(mesh)
            state, metrics = step(state, batch)
            losses.append(float(jax.device_get(metrics["train/loss"])))
        assert int(jax.device_get(state.step)) == 4
        with pytest.raises(Exception, match="Disallowed host-to-device transfer"):
            step(state, synthetic_batch(config, 4))
    assert np.all(np.isfinite(losses))


def test_prefetch_keeps_size_batches_ahead():
    mesh = sharding.make_mesh()
    read = []

    def source():
        for i in range(5):
            read.append(i)
            yield {"x": np.full((8,), i, np.int32)}

    it = sharding.prefetch_to_device(source(), 2, mesh)
    assert read == []  # nothing read before the first batch is asked for
    first = next(it)
    assert int(jax.device_get(first["x"])[0]) == 0 and read == [0, 1, 2]
    assert [int(jax.device_get(b["x"])[0]) for b in it] == [1, 2, 3, 4]


def test_make_mesh_uses_the_given_devices():
    devices = jax.devices()[::-1]
    mesh = sharding.make_mesh(devices)
    assert mesh.axis_names == ("data",) and list(mesh.devices.flat) == devices
    assert sharding.make_mesh().size == 8 and sharding.make_mesh(devices[:1]).size == 1


@pytest.mark.slow
def test_resume_is_exact(tmp_path, monkeypatch, capsys):
    """Stopped at step 3 and restarted, the run logs the same losses as an uninterrupted run. The
    loop runs under `transfer_guard('disallow')` (saves and evaluators excepted). The long phases
    say when they start and how long they took; a resume with the same config says nothing more,
    one with another `total_steps` says so in one line."""
    monkeypatch.setattr(train, "LOOP_TRANSFER_GUARD", "disallow")
    config = tiny_config("mocov2")
    config.total_steps = RESUME_STEPS
    config.checkpoint_every_steps = 100
    train.train_and_evaluate(config, str(tmp_path / "straight"))
    interrupted = str(tmp_path / "interrupted")
    train.train_and_evaluate(config, interrupted, stop_after_steps=3)
    assert _losses_by_step(interrupted).keys() == {1, 2, 3}
    capsys.readouterr()
    train.train_and_evaluate(config, interrupted)
    out = capsys.readouterr().out
    for phase in (
        "restoring the newest checkpoint",
        "compiling the train step (and running the first)",
    ):
        assert f"{phase} ...\n" in out and re.search(f"{re.escape(phase)}: [0-9.]+ s\n", out), out
    assert "differs" not in out
    straight, resumed = _losses_by_step(str(tmp_path / "straight")), _losses_by_step(interrupted)
    assert sorted(resumed) == list(range(1, RESUME_STEPS + 1))
    np.testing.assert_allclose(
        [resumed[s] for s in sorted(resumed)], [straight[s] for s in sorted(straight)], rtol=1e-6
    )
    # extended: the schedules re-stretch, and the run says so
    longer = config.copy_and_resolve_references()
    longer.total_steps = RESUME_STEPS + 2
    train.train_and_evaluate(longer, interrupted)
    lines = [x for x in capsys.readouterr().out.splitlines() if "differs" in x]
    lr = float(train.build_experiment(longer).lr_schedule(RESUME_STEPS))
    assert lines == [
        f"resuming step {RESUME_STEPS} with a config that differs from the run's config.json: "
        f"total_steps: {RESUME_STEPS} → {RESUME_STEPS + 2}. The schedules follow the new values "
        f"from here (lr {lr:.4g} at step {RESUME_STEPS})."
    ]


@pytest.mark.slow
def test_nan_loss_stops_and_keeps_last_good_checkpoint(tmp_path):
    config = tiny_config("ir")
    config.total_steps = 8
    config.checkpoint_every_steps = 2
    config.log_every_steps = 2
    train.train_and_evaluate(config, str(tmp_path), stop_after_steps=2)  # good checkpoint at 2
    config.optim.base_lr = 1e30
    with pytest.raises(train.TrainingError, match="non-finite loss.*step 2"):
        train.train_and_evaluate(config, str(tmp_path))
    from ssl_jax.checkpoint import Checkpointer

    assert Checkpointer(str(tmp_path)).latest_step() == 2


@pytest.mark.slow
def test_workdir_of_another_model_is_refused(tmp_path):
    from ssl_jax.checkpoint import CheckpointError

    config = tiny_config("ir")
    train.train_and_evaluate(config, str(tmp_path), stop_after_steps=1)
    config.model.width = 0.25
    with pytest.raises(CheckpointError, match="different model shape"):
        train.train_and_evaluate(config, str(tmp_path))


@pytest.mark.slow
def test_evaluators_run_on_schedule_and_never_after_a_stop(tmp_path, monkeypatch):
    """kNN every 2 steps of 4: a SIGTERM seen at step 2 saves step 2 and raises StopRequested
    without the kNN due there; the restarted run evaluates at step 4 only."""
    import os
    import signal

    config = tiny_config("mocov2")
    config.total_steps = 4
    config.checkpoint_every_steps = 100
    config.evals.knn = dict(
        type="knn", every_steps=2, k=5, temperature=0.1, num_train=32, num_test=16, batch_size=16
    )
    polls = []
    poll = run_control.StopVote.poll

    def poll_with_sigterm_at_step_2(self, *, sync):
        polls.append(sync)
        if len(polls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)  # handled by the loop's handler at once
        return poll(self, sync=sync)

    monkeypatch.setattr(run_control.StopVote, "poll", poll_with_sigterm_at_step_2)
    with pytest.raises(run_control.StopRequested, match="SIGTERM: stopped after step 2") as stop:
        train.train_and_evaluate(config, str(tmp_path))
    assert stop.value.step == 2
    from ssl_jax.checkpoint import Checkpointer
    from ssl_jax.output.writers import read_metrics

    assert Checkpointer(str(tmp_path)).manager.all_steps() == [2]
    assert not [r for r in read_metrics(str(tmp_path)) if "eval/knn_top1" in r]
    monkeypatch.undo()
    train.train_and_evaluate(config, str(tmp_path))
    knn_steps = [r["step"] for r in read_metrics(str(tmp_path)) if "eval/knn_top1" in r]
    assert knn_steps == [4]


def test_the_run_and_its_probes_random_init_compile_the_state_once(monkeypatch):
    """The fresh state and the probe table's random-init encoder come from one compiled
    initialiser (its compilation, the initialisers' random draws, took seconds a time), and the
    random init is the run's own step-0 encoder."""
    exp = train.build_experiment(tiny_config("mocov2"))
    traces = []
    init_buffers = exp.method.init_buffers
    monkeypatch.setattr(exp.method, "init_buffers", lambda *a: traces.append(1) or init_buffers(*a))
    fresh = train.init_or_restore(exp, None)
    first = len(traces)
    random_init = train.eval_context(exp, "unused").random_init()
    assert len(traces) == first  # not traced (nor compiled) again
    for a, b in zip(jax.tree.leaves(fresh.params), jax.tree.leaves(random_init["params"])):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
