"""The W&B writer, run offline (`config.wandb.mode=offline`): the run's file holds every logged
scalar at its step and the config; a resumed job continues the same run (its id kept in the
workdir); pictures reach the same run; only process 0 writes; a W&B run asked for without wandb
installed is one config error. The run file is read with a reader written here from the format
(LevelDB log blocks of `wandb_internal_pb2.Record`), not with wandb's own."""

import glob
import json
import os
import struct

import numpy as np
import pytest

pytest.importorskip("wandb", reason="wandb not installed (requirements-dev.txt has it)")

from wandb.proto import wandb_internal_pb2  # noqa: E402

from ssl_jax import train  # noqa: E402
from ssl_jax.config_checks import ConfigError  # noqa: E402
from ssl_jax.output import writers
from tests.helpers import tiny_config  # noqa: E402

BLOCK = 32768  # LevelDB log block; records never straddle a block's last 6 bytes


def read_run(path: str) -> dict:
    """{'run': Run record, 'history': [{key: value}], 'ids': run ids} of a `.wandb` file."""
    raw = open(path, "rb").read()
    assert raw[:4] == b":W&B"
    pos, pending, out = 7, b"", {"history": [], "run": None}
    while pos + 7 <= len(raw):
        if BLOCK - pos % BLOCK < 7:
            pos += BLOCK - pos % BLOCK
            continue
        _, length, kind = struct.unpack("<IHB", raw[pos : pos + 7])
        data, pos = raw[pos + 7 : pos + 7 + length], pos + 7 + length
        if kind in (1, 4):  # FULL, LAST
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending + data if kind == 4 else data)
            pending = b""
            which = record.WhichOneof("record_type")
            if which == "history":
                row = {}
                for item in record.history.item:
                    _flatten(
                        item.key or "/".join(item.nested_key), json.loads(item.value_json), row
                    )
                out["history"].append(row)
            elif which == "run":
                out["run"] = record.run
        elif kind in (2, 3):  # FIRST, MIDDLE
            pending += data
        else:
            break
    return out


def _flatten(key: str, value, row: dict) -> None:
    """A media value may come as one JSON object under its key or as one item per field
    (`key/_type`, ...): both become the per-field form."""
    if isinstance(value, dict):
        for sub, v in value.items():
            _flatten(f"{key}/{sub}", v, row)
    else:
        row[key] = value


def _config(total_steps):
    config = tiny_config()
    config.total_steps = total_steps
    config.wandb.update(project="ssl-jax-test", mode="offline", tags=("ci",), name="tiny")
    return config


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory):
    """4 steps, then the same job resumed to 6 (a second W&B process on the same id)."""
    os.environ.setdefault("WANDB_SILENT", "true")
    workdir = str(tmp_path_factory.mktemp("wandb"))
    train.train_and_evaluate(_config(4), workdir)
    train.train_and_evaluate(_config(6), workdir)
    return workdir


def test_the_run_holds_every_scalar_at_its_step_and_the_config(offline_run):
    run_id = open(os.path.join(offline_run, writers.WANDB_ID_FILE)).read().strip()
    files = sorted(glob.glob(os.path.join(offline_run, "wandb", "offline-run-*", "run-*.wandb")))
    assert len(files) == 2 and all(f.endswith(f"run-{run_id}.wandb") for f in files)
    logged = [row for f in files for row in read_run(f)["history"]]
    jsonl = {r["step"]: r for r in writers.read_metrics(offline_run)}
    assert sorted(row["step"] for row in logged) == sorted(jsonl) == [1, 2, 3, 4, 5, 6]
    for row in logged:
        expected = jsonl[row["step"]]
        for key, value in expected.items():
            np.testing.assert_allclose(row[key], value, rtol=1e-6, err_msg=key)
    run = read_run(files[0])["run"]
    assert run.run_id == run_id and run.project == "ssl-jax-test" and list(run.tags) == ["ci"]
    config = {i.key: json.loads(i.value_json) for i in run.config.update}
    assert config["method"] == "mocov2" and config["total_steps"] == 4
    assert config["wandb"]["project"] == "ssl-jax-test"


def test_pictures_reach_the_same_run(offline_run, tmp_path):
    from PIL import Image

    png = str(tmp_path / "curves.png")
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(png)
    writers.log_pictures(offline_run, _config(6), [png])
    files = sorted(glob.glob(os.path.join(offline_run, "wandb", "offline-run-*", "run-*.wandb")))
    run_id = open(os.path.join(offline_run, writers.WANDB_ID_FILE)).read().strip()
    assert len(files) == 3 and all(run_id in f for f in files)
    rows = [r for f in files for r in read_run(f)["history"]]
    found = [r for r in rows if "pictures/curves/_type" in r]
    assert len(found) == 1, [sorted(r) for r in rows]  # on failure: every row's keys
    (row,) = found
    assert row["pictures/curves/_type"] == "image-file" and row["pictures/curves/width"] == 8
    media = os.path.join(os.path.dirname(files[-1]), "files", row["pictures/curves/path"])
    assert np.array_equal(np.asarray(Image.open(media)), np.asarray(Image.open(png)))


def test_only_process_zero_writes(monkeypatch):
    config = _config(2)
    assert writers.wandb_enabled(config)
    monkeypatch.setattr(writers.jax, "process_index", lambda: 1)
    assert not writers.wandb_enabled(config)
    config.wandb.project = ""
    monkeypatch.setattr(writers.jax, "process_index", lambda: 0)
    assert not writers.wandb_enabled(config) and not writers.wandb_enabled(None)


def test_bad_wandb_config_is_one_error(monkeypatch):
    config = _config(2)
    config.wandb.mode = "sometimes"
    with pytest.raises(ConfigError, match="wandb.mode"):
        writers.check_wandb_config(config.wandb)
    config.wandb.mode = "offline"
    real = writers.importlib.util.find_spec
    monkeypatch.setattr(
        writers.importlib.util, "find_spec", lambda name: None if name == "wandb" else real(name)
    )
    with pytest.raises(ConfigError, match="not installed: pip install wandb"):
        writers.check_wandb_config(config.wandb)
    config.wandb.project = ""
    writers.check_wandb_config(config.wandb)  # not asked for: no need for it
