"""The device pipeline's promise: on Fashion-MNIST / color_fashion_mnist the library runs in a Python
where `import tensorflow` fails. Each test runs a subprocess whose import system does not find
TensorFlow, tfds or tf_keras (`run_without_tensorflow`, `run_main_without_tensorflow`)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Sequence

import pytest

from tests.data.data_helpers import make_fashion_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLOCKED = ("tensorflow", "tensorflow_datasets", "tf_keras")

# Prepended to the subprocess's code: every finder of `sys.meta_path` is wrapped so that a BLOCKED
# package is not found, as if not installed: `import tensorflow` raises ModuleNotFoundError and
# `importlib.util.find_spec("tensorflow")` is None (libraries probe with it, e.g. etils' epath
# under orbax). The names looked up are kept in `_TF_LOOKUPS` (printed to stderr at the end).
BLOCK_TENSORFLOW = f"""
import sys

_TF_LOOKUPS = set()

class _HideTensorFlow:
    def __init__(self, finder):
        self._finder = finder

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            _TF_LOOKUPS.add(name)
            return None
        find = getattr(self._finder, "find_spec", None)
        return None if find is None else find(name, path, target)

    def __getattr__(self, attr):
        return getattr(self._finder, attr)

sys.meta_path[:] = [_HideTensorFlow(f) for f in sys.meta_path]
"""
# Appended: nothing blocked got imported.
CHECK_NO_TENSORFLOW = f"""
_loaded = sorted(m for m in sys.modules if m.split(".")[0] in {BLOCKED!r})
assert not _loaded, f"imported despite the blocker: {{_loaded}}"
print("looked for (not found):", sorted(_TF_LOOKUPS), file=sys.stderr, flush=True)
print("no tensorflow: ok", flush=True)
"""


def run_without_tensorflow(code: str, timeout: float) -> subprocess.CompletedProcess:
    """`code` in a fresh `sys.executable` (cwd and `sys.path[0]` the repository) where TensorFlow,
    tfds and tf_keras are not found (`BLOCK_TENSORFLOW`); it ends by checking none is in
    `sys.modules`.
    Returns the finished process (text stdout / stderr); the caller checks `returncode`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", BLOCK_TENSORFLOW + code + CHECK_NO_TENSORFLOW],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_main_without_tensorflow(args: Sequence[str], timeout: float) -> subprocess.CompletedProcess:
    """`python -m ssl_jax.main *args` under `run_without_tensorflow`; a non-zero exit of main is
    the process's exit status (the TensorFlow check runs after main either way)."""
    code = f"""
import os
import runpy

def _exit(code):  # main ends with os._exit (no teardown): raise instead, so the check runs
    raise SystemExit(code)

os._exit = _exit
sys.argv = ["ssl_jax.main", *{list(args)!r}]
try:
    runpy.run_module("ssl_jax.main", run_name="__main__", alter_sys=True)
    _status = 0
except SystemExit as e:
    _status = e.code or 0
"""
    return run_without_tensorflow(code + CHECK_NO_TENSORFLOW + "sys.exit(_status)\n", timeout)


def _check(result: subprocess.CompletedProcess) -> None:
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-6000:]}"
    assert "no tensorflow: ok" in result.stdout


def test_the_blocker_blocks():
    """The host augmentation (tf ops) cannot be imported in such a process."""
    result = run_without_tensorflow("import ssl_jax.data.host.augment\n", timeout=120)
    assert result.returncode != 0
    assert "ModuleNotFoundError: No module named 'tensorflow'" in result.stderr


def test_every_device_op_module_imports_without_tensorflow():
    """The device twins (every module of `ssl_jax.data.device`, with what they import) and the
    device pipeline never import TensorFlow."""
    code = """
import importlib, pkgutil
import ssl_jax.data.device as device
for module in pkgutil.iter_modules(device.__path__):
    importlib.import_module(f"ssl_jax.data.device.{module.name}")
import ssl_jax.data.device_pipeline
"""
    _check(run_without_tensorflow(code, timeout=120))


@pytest.fixture(scope="module")
def fashion_dir(tmp_path_factory):
    return make_fashion_dir(str(tmp_path_factory.mktemp("fashion")), num_train=64, num_test=40)


def test_library_and_fashion_mnist_data_without_tensorflow(fashion_dir, tmp_path):
    """Every module of a pretraining run imports, and the default config's data paths run: the
    eval batches (numpy, grey and grey → RGB), `load_arrays`, `first_images` and the augmentation
    picture's views of the device pipeline."""
    code = f"""
import numpy as np
import ssl_jax.checkpoint, ssl_jax.export, ssl_jax.main, ssl_jax.view_learning
import ssl_jax.evaluate.encoder, ssl_jax.evaluate.evaluators, ssl_jax.evaluate.jobs
import ssl_jax.evaluate.knn, ssl_jax.evaluate.linear_probe
from ssl_jax import configs
from ssl_jax.data import datasets, device_pipeline, pipeline
from ssl_jax.evaluate import pictures

config = configs.load("configs/mocov2_fashion_mnist.py:runlocal")
config.data.data_dir = {fashion_dir!r}
config.data.pipeline = "device"
for channels in (1, 3):
    config.data.channels = channels
    batch = next(iter(pipeline.eval_iterator(config, "test", batch_size=16)))
    assert batch["image"].shape == (16, 28, 28, channels), batch["image"].shape
    assert batch["image"].dtype == np.uint8 and batch["mask"].all()
images, labels = datasets.load_arrays(config.data, "train")
assert images.shape == (64, 28, 28, 1) and labels.shape == (64,)
assert len(datasets.first_images(config.data, "train", 2)) == 2
config.data.channels = 1
columns, cells = pictures.augmentation_views(config, rows=2, draws=1)
assert len(columns) == 1 + len(config.data.views) and cells[(1, 1)].dtype == np.uint8
"""
    _check(run_without_tensorflow(code, timeout=300))


def test_color_fashion_mnist_eval_without_tensorflow(fashion_dir, tmp_path):
    """color_fashion_mnist's eval batches (generated into a small cache), RGB and RGB → grey."""
    pytest.importorskip("skimage")
    code = f"""
import numpy as np
from ssl_jax import configs
from ssl_jax.data import pipeline

config = configs.load("configs/mocov2_color_fashion_mnist.py:runlocal")
config.data.data_dir = {fashion_dir!r}
config.data.color_fashion_mnist.cache_dir = {str(tmp_path)!r}
for channels in (3, 1):
    config.data.channels = channels
    batches = list(pipeline.eval_iterator(config, "test", batch_size=16))
    assert [int(b["mask"].sum()) for b in batches] == [16, 16, 8]
    assert batches[0]["image"].shape == (16, 32, 32, channels)
"""
    _check(run_without_tensorflow(code, timeout=300))


@pytest.mark.slow
def test_main_without_tensorflow(fashion_dir, tmp_path):
    """`python -m ssl_jax.main` with the device pipeline, in a Python without TensorFlow: a config
    error is reported as usual; then the whole `mocov2_fashion_mnist:runlocal` job runs (training,
    the kNN monitor and the probe table at its last step, checkpoints, TensorBoard events, the
    pictures), and its encoder is exported (torchvision names, a CIFAR stem) in another such
    process (where torch is installed, as for the export tests)."""
    workdir = str(tmp_path / "run")
    args = [
        "--config=configs/mocov2_fashion_mnist.py:runlocal",
        f"--workdir={workdir}",
        "--config.data.pipeline=device",
        f"--config.data.data_dir={fashion_dir}",
    ]
    result = run_main_without_tensorflow([*args, "--config.job=nope"], timeout=300)
    assert "config.job='nope' is not allowed" in result.stderr, result.stderr[-6000:]
    assert result.returncode == 2 and "no tensorflow: ok" in result.stdout

    result = run_main_without_tensorflow(
        [*args, "--config.evals.knn.every_steps=3", "--config.evals.probe_table.every_steps=0"],
        timeout=900,
    )
    _check(result)
    assert "in device memory" in result.stdout and "step 6/6" in result.stdout, result.stdout
    files = set(os.listdir(workdir))
    assert {"metrics.jsonl", "checkpoints", "probe_table.txt"} <= files, files
    assert any(f.startswith("events.out.tfevents") for f in files), files
    assert any(f.endswith(".png") for f in files), files
    from ssl_jax.output.writers import read_metrics

    records = read_metrics(workdir)
    assert any("eval/knn_top1" in r for r in records) and "probe/top1" in records[-1], records
    if importlib.util.find_spec("torch") is None:
        return  # the export tests skip without torch too
    out = str(tmp_path / "encoder.pth")
    code = f"""
from ssl_jax import export
export.export({workdir!r}, "torchvision", {out!r})
"""
    _check(run_without_tensorflow(code, timeout=300))
    assert os.path.getsize(out) > 0
