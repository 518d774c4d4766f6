"""Unreadable files in an image folder (`config.data.bad_images`): named before anything compiles
('error'), or left out with one warning each ('skip'); the check is cached per file."""

import io
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from ssl_jax import configs, train, validation
from ssl_jax.data import datasets
from ssl_jax.data.sources import image_folder
from tests.helpers import tiny_config
from tests.process_env import xla_flags

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BAD = ("cat/cut.jpg", "cat/notes.jpg", "dog/cut.png")  # truncated JPEG, text file, truncated PNG


def _encoded(fmt: str, seed: int) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (16, 16), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, fmt)
    return out.getvalue()


@pytest.fixture
def folder(tmp_path):
    """Two classes of 10 good 16-px images (PNG and JPEG) and the three `BAD` files."""
    root = tmp_path / "images"
    for c, name in enumerate(("cat", "dog")):
        (root / name).mkdir(parents=True)
        for i in range(10):
            fmt, ext = ("PNG", "png") if i % 2 else ("JPEG", "jpg")
            (root / name / f"{i:02d}.{ext}").write_bytes(_encoded(fmt, 10 * c + i))
    jpeg, png = _encoded("JPEG", 99), _encoded("PNG", 98)
    (root / BAD[0]).write_bytes(jpeg[: len(jpeg) // 2])
    (root / BAD[1]).write_text("not a picture\n")
    (root / BAD[2]).write_bytes(png[: len(png) // 2])
    return str(root)


@pytest.fixture(autouse=True)
def _fresh_caches():
    datasets.clear_cache()
    yield
    datasets.clear_cache()


def _config(folder: str, bad_images: str):
    c = tiny_config("mocov2")
    c.data.update(name="image_folder", data_dir=folder, bad_images=bad_images)
    c.data.update(train_split="train", eval_train_split="train", eval_test_split="train")
    c.total_steps = 2
    return c


def _no_compile(*args, **kwargs):
    raise AssertionError("the train step was compiled")


def test_error_names_every_bad_file_before_compiling(folder, tmp_path, monkeypatch):
    monkeypatch.setattr(train, "jit_train_step", _no_compile)
    with pytest.raises(datasets.DataError) as e:
        train.train_and_evaluate(_config(folder, "error"), str(tmp_path / "run"))
    message = str(e.value)
    for name in BAD:
        assert os.path.join(folder, name) in message
    assert "3 of 23 files" in message and "--config.data.bad_images=skip" in message
    assert "Unknown image file format" in message  # the text file, in tf's words


def test_error_on_the_device_pipeline_path(folder):
    dc = _config(folder, "error").data
    with pytest.raises(datasets.DataError, match="cut.png"):
        datasets.load_arrays(dc, "train")
    dc.bad_images = "skip"
    images, labels = datasets.load_arrays(dc, "train")
    assert images.shape == (20, 16, 16, 1) and labels.tolist() == [0] * 10 + [1] * 10


def test_skip_trains_on_the_rest_and_names_each_file(folder, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        state = train.train_and_evaluate(_config(folder, "skip"), str(tmp_path / "run"))
    assert int(state.step) == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    for name in BAD:
        assert sum(os.path.join(folder, name) in w for w in warnings) == 1, warnings
    assert any("3 of 23 files skipped" in w for w in warnings), warnings
    assert datasets.num_examples(_config(folder, "skip").data, "train") == 20


def test_second_open_reads_the_cache(folder, monkeypatch):
    dc = _config(folder, "skip").data
    calls = []
    decode = image_folder.image_error

    def counting(path, channels):
        calls.append(path)
        return decode(path, channels)

    monkeypatch.setattr(image_folder, "image_error", counting)
    assert datasets.num_examples(dc, "train") == 20
    assert len(calls) == 23
    datasets.clear_cache()  # a new process: only the cache file remains
    calls.clear()
    assert datasets.num_examples(dc, "train") == 20
    assert calls == []
    # a changed file is decoded again, alone
    datasets.clear_cache()
    changed = os.path.join(folder, "dog", "00.jpg")
    with open(changed, "ab") as f:
        f.write(b"\0")
    assert datasets.num_examples(dc, "train") == 20
    assert calls == [changed]


def test_read_only_folder_caches_in_the_user_cache(folder, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    dc = _config(folder, "skip").data
    assert datasets.num_examples(dc, "train") == 20
    assert not os.path.exists(os.path.join(folder, image_folder.CHECK_FILE))
    assert len(os.listdir(tmp_path / "cache" / "ssl_jax" / "image_check")) == 1


def test_wrong_value_is_a_config_error(folder):
    c = _config(folder, "ignore")
    with pytest.raises(configs.ConfigError, match=r"data.bad_images.*\['error', 'skip'\]"):
        validation.validate(c, num_devices=8)
    with pytest.raises(configs.ConfigError, match="bad_images"):
        datasets.num_examples(c.data, "train")


def test_command_line_prints_one_error_and_no_traceback(folder, tmp_path):
    env = dict(os.environ, XLA_FLAGS=xla_flags(2))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ssl_jax.main",
            "--config=tests/tiny_run_config.py",
            f"--workdir={tmp_path / 'run'}",
            "--config.data.name=image_folder",
            f"--config.data.data_dir={folder}",
            "--config.data.eval_test_split=train",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "3 of 23 files" in errors[0], proc.stderr
    for name in BAD:
        assert os.path.join(folder, name) in proc.stderr
