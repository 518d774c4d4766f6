"""`benchmarks/accelerator.py --step-only` on a host without TensorFlow (the GPU image it ran on has
JAX and PyTorch only): `_common.stub_tensorflow_if_missing` lets the library import and a step be
built; `input_demand.device_rates` reads the figures the accelerator run wrote; and the loops
(`timed_loop`, `--photos`) run end to end."""

import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HIDE_TF_AND_BUILD = """
import importlib.util, sys
find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, *a: (
    None if name.split('.')[0] in ('tensorflow', 'tensorflow_datasets') else find_spec(name, *a))
sys.meta_path.insert(0, type('Block', (), {'find_spec': staticmethod(
    lambda name, *a: (_ for _ in ()).throw(ImportError('real tensorflow imported'))
    if name.split('.')[0] == 'tensorflow' and not stubbed else None)})())
stubbed = False
from benchmarks._common import stub_tensorflow_if_missing
stubbed = stub_tensorflow_if_missing()
assert stubbed
from benchmarks import accelerator
from ssl_jax import main, train
config = accelerator.load_config('mocov2_imagenet:runlocal', batch=16, dtype='float32')
exp = train.build_experiment(config)
print('built', exp.ctx.num_train_examples, config.global_batch_size)
"""


def _python(*args: str) -> subprocess.CompletedProcess:
    """`python *args` from the repository root on CPU; asserts it exits 0 (its stderr's tail if not)."""
    run = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def test_step_only_imports_without_tensorflow():
    out = _python("-c", HIDE_TF_AND_BUILD)
    assert "built" in out.stdout and " 16" in out.stdout


def test_device_rates_picks_plain_bf16_rows(tmp_path):
    from benchmarks.input_demand import device_rates

    rows = [
        {"config": "m", "batch": 256, "dtype": "bfloat16", "overrides": [], "pipelined": 10.0},
        {"config": "m", "batch": 256, "dtype": "bfloat16", "overrides": [], "pipelined": 12.0},
        {"config": "m", "batch": 512, "dtype": "bfloat16", "overrides": [], "pipelined": 99.0},
        {"config": "m", "batch": 256, "dtype": "float32", "overrides": [], "pipelined": 98.0},
        {"config": "m", "batch": 256, "dtype": "bfloat16", "overrides": ["x=1"], "pipelined": 97.0},
        {
            "config": "m",
            "batch": 256,
            "dtype": "bfloat16",
            "overrides": ["data.device_ops=True"],
            "pipelined": 8.0,
        },
        {
            "config": "m",
            "batch": 256,
            "dtype": "bfloat16",
            "overrides": ["data.device_crops=512", "data.name=image_folder", "data.data_dir=/p"],
            "pipelined": 7.0,
        },
        {
            "config": "m",
            "batch": 256,
            "dtype": "bfloat16",
            "overrides": ["data.device_ops=True", "data.device_crops=0", "data.name=image_folder"],
            "pipelined": 9.0,
        },
    ]
    path = tmp_path / "rates.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert device_rates(str(path)) == {
        ("m", "host"): 12.0,
        ("m", "device"): 9.0,
        ("m", "crops"): 7.0,
    }
    assert device_rates(str(tmp_path / "missing.jsonl")) == {}


def _accelerator():
    from benchmarks import accelerator

    return accelerator


def test_main_prints_and_records_the_device_kind(tmp_path, monkeypatch, capsys):
    """main()'s devices line and each JSON row name `jax.devices()[0].device_kind` (the timing
    itself is stubbed: no config is built or run)."""
    import types

    import jax

    accelerator = _accelerator()
    config = types.SimpleNamespace(global_batch_size=16, model=types.SimpleNamespace(dtype="f32"))
    figures = dict(synced=1.0, pipelined=2.0, copies=3.0, copies_wait=0.5, peak_bytes=0)
    monkeypatch.setattr(accelerator, "load_config", lambda *a, **k: config)
    monkeypatch.setattr(accelerator, "loop_rates", lambda *a, **k: dict(figures))
    out = tmp_path / "rows.jsonl"
    monkeypatch.setattr(sys, "argv", ["accelerator.py", "--configs=a,b", f"--json={out}"])
    accelerator.main()
    kind = jax.devices()[0].device_kind
    assert f"devices: {jax.device_count()} × {kind} (" in capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["config"], r["device"], r["pipelined"]) for r in rows] == [
        ("a", kind, 2.0),
        ("b", kind, 2.0),
    ]


def _counting_step(monkeypatch):
    """A tiny jitted step (state + 1) as `compiled_step` returns it, and the `block_until_ready`
    calls made while it runs."""
    import jax
    import jax.numpy as jnp

    waits = []
    real = jax.block_until_ready
    monkeypatch.setattr(jax, "block_until_ready", lambda x: waits.append(x) or real(x))
    step = jax.jit(lambda state, batch: (state + batch, {"loss": state.sum()}))
    return (step, jnp.zeros(3), jnp.ones(3)), waits


def test_time_steps_synced_and_back_to_back(monkeypatch):
    from benchmarks.train_step import time_steps

    compiled, waits = _counting_step(monkeypatch)
    times, compiled = time_steps(compiled, 4)
    assert len(times) == 4 and len(waits) == 4 and all(t > 0 for t in times)
    times, compiled = time_steps(compiled, 5, sync_each_step=False)
    assert len(times) == 1 and times[0] > 0
    assert len(waits) == 5  # one wait, on the last state and metrics
    assert float(compiled[1][0]) == 9.0


def test_step_rates_times_through_time_steps(monkeypatch):
    import types

    accelerator = _accelerator()
    from benchmarks import train_step

    compiled, waits = _counting_step(monkeypatch)
    monkeypatch.setattr(train_step, "compiled_step", lambda config: compiled)
    calls = []
    real = train_step.time_steps
    monkeypatch.setattr(train_step, "time_steps", lambda *a, **k: calls.append(k) or real(*a, **k))
    config = types.SimpleNamespace(global_batch_size=3)
    figures, (_, state, _) = accelerator.step_rates(config, 6)
    assert calls == [{}, {"sync_each_step": False}]
    assert len(waits) == 6 + 1 and float(state[0]) == 12.0
    assert figures["synced"] > 0 and figures["pipelined"] > 0 and "peak_bytes" in figures


def test_timed_loop_hands_back_the_donated_state():
    """The step donates its state: a second loop (the tf.data one after the host copies) must run on
    the state the first returned, not on the donated original (the first GPU call, 2026-11-24)."""
    import itertools

    import jax
    import jax.numpy as jnp

    accelerator = _accelerator()
    step = jax.jit(lambda s, b: (s + b["index"].sum(), {"loss": s}), donate_argnums=0)
    batches = itertools.repeat({"index": np.ones(4, np.int32)})
    first, state = accelerator.timed_loop(step, jnp.zeros(()), batches, 3)
    second, state = accelerator.timed_loop(step, state, batches, 3)
    assert float(state) == 4 * (2 + 3) * 2
    assert first["rate"] > 0 and 0 <= second["wait"] <= 1


def test_whole_loop_on_written_photos(tmp_path):
    """`--photos`: the loop is fed from an image_folder of written JPEGs through the config's
    tf.data pipeline, end to end (a :runlocal config on CPU), here with the views cut on the device
    (`data.device_crops`): the synthetic batches of the step alone have the canvas layout too."""
    out = tmp_path / "rows.jsonl"
    args = [
        "--configs=mocov2_fashion_mnist:runlocal",
        "--photos=24",
        "--batch=8",
        "--steps=2",
        "--dtype=float32",
        f"--json={out}",
        "--override",
        "data.device_ops=True",
        "data.device_crops=128",  # the photos (~500 × 375) shrunk onto the canvas
    ]
    run = _python("benchmarks/accelerator.py", *args)
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (
        "data.name=image_folder" in row["overrides"] and "data.device_crops=128" in row["overrides"]
    )
    assert row["loop"] > 0 and 0 <= row["wait"] <= 1
    assert "24 JPEG photos" in run.stdout and "whole loop" in run.stdout


def test_timed_runs_cap_a_pod_sized_batch(tmp_path, monkeypatch, capsys):
    """A config's pod batch is timed at `MAX_PER_DEVICE_BATCH` per device unless `--batch` says
    otherwise (the timing itself is stubbed)."""
    import types

    import jax

    accelerator = _accelerator()

    def load_config(name, *, batch, dtype, overrides=()):
        model = types.SimpleNamespace(dtype=dtype)
        return types.SimpleNamespace(global_batch_size=batch or 10**6, model=model)

    figures = dict(synced=1.0, pipelined=2.0, copies=3.0, copies_wait=0.5, peak_bytes=0)
    monkeypatch.setattr(accelerator, "load_config", load_config)
    monkeypatch.setattr(accelerator, "loop_rates", lambda *a, **k: dict(figures))
    cap = accelerator.MAX_PER_DEVICE_BATCH * jax.device_count()
    for flags, batch in (([], cap), (["--batch=64"], 64)):
        out = tmp_path / f"rows{batch}.jsonl"
        monkeypatch.setattr(sys, "argv", ["accelerator.py", "--configs=a", f"--json={out}", *flags])
        accelerator.main()
        assert json.loads(out.read_text())["batch"] == batch
        assert ("meant for a pod" in capsys.readouterr().out) == (not flags)
