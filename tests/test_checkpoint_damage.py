"""Nothing lost: a crash in the loop lets the save in flight finish; a damaged newest checkpoint
is named, set aside, and the run resumes from the newest intact one (and says so); when none is
intact, one error says so."""

import glob
import os

import numpy as np
import pytest

from ssl_jax import checkpoint, train
from ssl_jax.data import pipeline
from ssl_jax.output import writers
from tests.helpers import tiny_config


def _losses(workdir: str) -> dict[int, float]:
    return {r["step"]: r["train/loss"] for r in writers.read_metrics(workdir) if "train/loss" in r}


def _truncate_largest_file(step_dir: str) -> str:
    """Cuts the biggest array file of one checkpoint to half its size; returns its path."""
    files = [f for f in glob.glob(os.path.join(step_dir, "**", "*"), recursive=True)]
    files = [f for f in files if os.path.isfile(f) and "METADATA" not in os.path.basename(f)]
    path = max(files, key=os.path.getsize)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    return path


@pytest.fixture(scope="module")
def six_steps(tmp_path_factory):
    """A run stopped after 4 of 6 steps, checkpoints at steps 2 and 4 (a copy per test)."""
    workdir = str(tmp_path_factory.mktemp("damage") / "run")
    config = tiny_config("mocov2")
    config.total_steps = 6
    train.train_and_evaluate(config, workdir, stop_after_steps=4)
    assert checkpoint.Checkpointer(workdir).manager.all_steps() == [2, 4]
    return config, workdir


def _copy(src: str, dst: str) -> str:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_a_damaged_newest_checkpoint_is_set_aside_and_the_run_resumes_from_the_intact_one(
    six_steps, tmp_path, capsys
):
    config, source = six_steps
    workdir = _copy(source, str(tmp_path / "run"))
    damaged = _truncate_largest_file(os.path.join(workdir, "checkpoints", "4"))
    state = train.train_and_evaluate(config, workdir)
    out = capsys.readouterr().out
    assert int(state.step) == 6
    line = next(x for x in out.splitlines() if x.startswith("the checkpoint at step 4"))
    assert "cannot be restored" in line and os.path.join(workdir, "checkpoints", "4") in line
    assert "resuming from the newest intact checkpoint, step 2 (set aside: step 4)" in out
    assert "Resuming from the checkpoint at step 2" in out
    # kept for a look, out of the way: the run saved its own step 4 and 6 again
    assert os.path.isfile(damaged.replace("checkpoints", "damaged_checkpoints", 1))
    assert checkpoint.Checkpointer(workdir).manager.all_steps()[-2:] == [4, 6]
    # steps 3..6 trained again from step 2's state: the same losses as the first attempt's 3, 4
    losses = _losses(workdir)
    assert sorted(losses) == [1, 2, 3, 4, 5, 6]
    first = _losses(source)
    np.testing.assert_allclose([losses[3], losses[4]], [first[3], first[4]], rtol=1e-6)


def test_when_no_checkpoint_is_intact_one_error_says_so(six_steps, tmp_path, capsys):
    config, source = six_steps
    workdir = _copy(source, str(tmp_path / "run"))
    for step in (2, 4):
        _truncate_largest_file(os.path.join(workdir, "checkpoints", str(step)))
    with pytest.raises(
        checkpoint.CheckpointError, match="no checkpoint in .* can be restored: step 4, 2"
    ):
        train.train_and_evaluate(config, workdir)
    out = capsys.readouterr().out
    assert out.count("cannot be restored") == 2


def test_unreadable_metadata_is_damage_too(six_steps, tmp_path, capsys):
    config, source = six_steps
    workdir = _copy(source, str(tmp_path / "run"))
    metadata = glob.glob(
        os.path.join(workdir, "checkpoints", "4", "**", "_METADATA"), recursive=True
    )
    assert metadata
    for path in metadata:
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)
    config = config.copy_and_resolve_references()
    config.total_steps = 4  # only the restore: step 2, then steps 3 and 4
    state = train.train_and_evaluate(config, workdir)
    assert int(state.step) == 4
    assert "resuming from the newest intact checkpoint, step 2" in capsys.readouterr().out


def test_a_crash_in_the_loop_lets_the_save_in_flight_finish(tmp_path, monkeypatch):
    """The data raises two steps after a save (the prefetch reads ahead): the loop waits for that
    save before the exception leaves, so its checkpoint is complete and restorable."""
    events = []
    real_iterator = pipeline.train_iterator

    def failing_iterator(*args, **kwargs):
        for index, batch in enumerate(real_iterator(*args, **kwargs)):
            if index == 5:
                events.append("raise")
                raise OSError("the disk went away")
            yield batch

    save, wait = checkpoint.Checkpointer.save, checkpoint.Checkpointer.wait
    monkeypatch.setattr(pipeline, "train_iterator", failing_iterator)
    monkeypatch.setattr(
        checkpoint.Checkpointer,
        "save",
        lambda self, *a, **k: (events.append("save"), save(self, *a, **k))[1],
    )
    monkeypatch.setattr(
        checkpoint.Checkpointer, "wait", lambda self: (events.append("wait"), wait(self))[1]
    )
    config = tiny_config("mocov2")
    config.total_steps = 10
    workdir = str(tmp_path / "run")
    with pytest.raises(OSError, match="the disk went away"):
        train.train_and_evaluate(config, workdir)
    assert events[-3:] == ["save", "raise", "wait"]
    assert checkpoint.Checkpointer(workdir).latest_step() == 2
    assert not glob.glob(os.path.join(workdir, "checkpoints", "*tmp*"))


# --------------------------------------------------------------------------------------------------
# Read-only users (export, load_encoder, the probe and kNN jobs): one error naming the damage and
# the steps that can still be read.


def _truncate_every_array_file(step_dir: str) -> None:
    """Every array data file of one checkpoint cut to half (which file holds the encoder's arrays
    varies): the encoder cannot be read."""
    files = glob.glob(os.path.join(step_dir, "**", "*"), recursive=True)
    files = [f for f in files if os.path.isfile(f) and "METADATA" not in os.path.basename(f)]
    for path in files:
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)


def _truncate_metadata(step_dir: str) -> None:
    paths = glob.glob(os.path.join(step_dir, "**", "_METADATA"), recursive=True)
    assert paths
    for path in paths:
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) // 2)


@pytest.mark.parametrize("damage", ["array", "metadata"])
def test_load_encoder_names_the_damaged_step_and_the_readable_ones(six_steps, tmp_path, damage):
    from ssl_jax.evaluate.encoder import load_encoder

    _, source = six_steps
    workdir = _copy(source, str(tmp_path / "run"))
    step4 = os.path.join(workdir, "checkpoints", "4")
    if damage == "array":
        _truncate_every_array_file(step4)
    else:
        _truncate_metadata(step4)
    with pytest.raises(checkpoint.CheckpointError) as info:
        load_encoder(workdir)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("the checkpoint at step 4 cannot be read: ") and step4 in message
    if damage == "metadata":  # the JSON error names no file: the damaged one is found and named
        assert "_METADATA: not valid JSON" in message
    assert message.endswith(
        "steps that can be read: 2; pass one's folder instead of the workdir, "
        f"e.g. {os.path.join(workdir, 'checkpoints', '2')}"
    )
    # ... and the folder it names loads
    assert load_encoder(os.path.join(workdir, "checkpoints", "2")).step == 2


def test_no_readable_step_is_said(six_steps, tmp_path):
    from ssl_jax.evaluate.encoder import load_encoder

    _, source = six_steps
    workdir = _copy(source, str(tmp_path / "run"))
    for step in (2, 4):
        _truncate_every_array_file(os.path.join(workdir, "checkpoints", str(step)))
    with pytest.raises(checkpoint.CheckpointError, match="no other checkpoint of this run can be"):
        load_encoder(workdir)


def test_a_damaged_config_json_is_one_error_naming_it(six_steps, tmp_path):
    _, source = six_steps
    workdir = _copy(source, str(tmp_path / "run"))
    path = os.path.join(workdir, "config.json")
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    with pytest.raises(checkpoint.CheckpointError, match=f"{path} cannot be read .*damaged"):
        checkpoint.read_config(workdir)


def test_export_and_knn_job_print_one_error_line(six_steps, tmp_path):
    """The commands a user runs: one `error:` line on stderr, exit status 2, no traceback."""
    import subprocess
    import sys

    _, source = six_steps
    workdir = _copy(source, str(tmp_path / "run"))
    _truncate_metadata(os.path.join(workdir, "checkpoints", "4"))
    # every array file cut: TensorStore's reads still in flight call back into a closed event
    # loop (hundreds of 'Event loop is closed' tracebacks before the error, unless dropped)
    arrays = _copy(source, str(tmp_path / "arrays"))
    _truncate_every_array_file(os.path.join(arrays, "checkpoints", "4"))
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commands = {
        "export": ["-m", "ssl_jax.export", f"--workdir={workdir}", f"--out={tmp_path}/e.pth"],
        "export arrays": ["-m", "ssl_jax.export", f"--workdir={arrays}", f"--out={tmp_path}/a.pth"],
        "knn": [
            "-m",
            "ssl_jax.main",
            "--config=configs/knn.py:runlocal",
            f"--config.init={workdir}",
            f"--workdir={tmp_path}/knn",
        ],
    }
    for name, args in commands.items():
        done = subprocess.run(
            [sys.executable, *args], cwd=repo, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 2, (name, done.stderr[-2000:])
        lines = [x for x in done.stderr.splitlines() if x.strip()]
        assert len(lines) == 1 and "Traceback" not in done.stderr, (name, done.stderr[-2000:])
        assert lines[0].startswith("error: the checkpoint at step 4 cannot be read"), lines
        assert "steps that can be read: 2" in lines[0]
    # absl's --verbosity brings the libraries' logs back (orbax's INFO lines)
    done = subprocess.run(
        [sys.executable, *commands["export"], "--verbosity=0"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and "checkpoint" in done.stderr.split("error:")[0], done.stderr
