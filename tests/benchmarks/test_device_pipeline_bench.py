"""`benchmarks/device_pipeline.py` end to end on a `:runlocal` config (both pipelines, the step alone
and the whole loop, the ratios, the plain PyTorch step beside them when torch is installed)."""

import importlib.util
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_side_by_side_table():
    run = subprocess.run(
        [
            sys.executable,
            "benchmarks/device_pipeline.py",
            "--config=configs/mocov2_fashion_mnist.py:runlocal",
            "--batch=16",
            "--steps=2",
            "--rounds=1",
            "--torch",
            "--torch-modes=eager",  # torch.compile alone takes a minute on 2 cores
        ],
        cwd=ROOT,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    rows = [line for line in run.stdout.splitlines() if line.startswith(("| tfdata", "| device"))]
    assert len(rows) == 2, run.stdout
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert float(cells[1].replace(",", "")) > 0 and float(cells[2].replace(",", "")) > 0
        assert cells[5].endswith("min")
    assert "device / tfdata: step alone x" in run.stdout
    if importlib.util.find_spec("torch") is not None:
        assert "torch eager:" in run.stdout
        assert "ssl_jax device loop / torch eager step: x" in run.stdout
