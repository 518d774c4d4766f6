"""experiments/default_job_sweep.py: variants, the table, resuming (a fake `ssl_jax.main`)."""

import json
import os
import stat

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from experiments import default_job_sweep as sweep  # noqa: E402

FAKE_MAIN = """#!/bin/sh
# stands for `python -m ssl_jax.main ...`: the default job's output and metrics.jsonl
echo "$@" >> "{calls}"
for a in "$@"; do case $a in --workdir=*) w=${{a#--workdir=}};; esac; done
case "$*" in *total_steps=fail*) echo "error: boom"; exit 2;; esac
echo "step 2/2 | loss 1.0000 | 100.0 img/s | ETA 0h00m00s"
echo "Linear probe (multinomial logistic regression (L-BFGS), kNN): features of train and test"
echo "Linear probe: multinomial logistic regression (L-BFGS) on standardised frozen features"
echo "encoder        top-1   top-5"
echo "raw pixels    84.60%  99.00%"
echo "pictures: done"
echo '{{"step": 2, "train/loss": 1.0}}' > "$w/metrics.jsonl"
echo '{{"step": 2, "probe/top1": 0.9, "probe/random_init_top1": 0.8, "probe/raw_pixels_top1": 0.846, "probe/knn_top1": 0.7}}' >> "$w/metrics.jsonl"
"""


@pytest.fixture
def fake_python(tmp_path):
    path = tmp_path / "fake_python"
    path.write_text(FAKE_MAIN.format(calls=tmp_path / "calls.txt"))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def _calls(tmp_path):
    path = tmp_path / "calls.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_variants_become_runs_and_rows_and_finished_ones_are_skipped(tmp_path, fake_python):
    workdir = tmp_path / "sweep"
    argv = [
        f"--workdir={workdir}",
        f"--python={fake_python}",
        "--set=total_steps=2",
        "--variant=default:",
        "--variant=moco: config=configs/mocov2_fashion_mnist.py:runlocal model.width=0.5",
    ]
    sweep.main(argv)
    calls = _calls(tmp_path)
    assert len(calls) == 2
    assert "--config=configs/sce_fashion_mnist.py" in calls[0].split()
    assert "--config.total_steps=2" in calls[0].split()
    moco = calls[1].split()
    assert "--config=configs/mocov2_fashion_mnist.py:runlocal" in moco
    assert "--config.model.width=0.5" in moco and f"--workdir={workdir}/moco" in moco
    table = (workdir / "sweep.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| default") or "moco" in line]
    assert len(rows) == 2
    for row in rows:
        assert "| 90.00 | 80.00 | 84.60 | 70.00 |" in row, row
    result = json.loads((workdir / "default" / sweep.RESULT_FILE).read_text())
    assert result["probe_min"] >= 0 and result["total_min"] >= result["pretrain_min"]
    log = (workdir / "default" / sweep.LOG_FILE).read_text()
    assert "raw pixels" in log and "s] step 2/2" in log

    # resumable: the finished variants are skipped, an unfinished one starts again from scratch
    (workdir / "half").mkdir()
    (workdir / "half" / "stale").write_text("x")
    sweep.main([*argv, "--variant=half: model.width=0.5"])
    calls = _calls(tmp_path)
    assert len(calls) == 3 and f"--workdir={workdir}/half" in calls[2].split()
    assert not (workdir / "half" / "stale").exists()
    assert len((workdir / "sweep.md").read_text().splitlines()) == 4 + 3


def test_a_failed_variant_stops_the_sweep_and_bad_variants_are_refused(tmp_path, fake_python):
    argv = [f"--workdir={tmp_path / 'sweep'}", f"--python={fake_python}"]
    with pytest.raises(RuntimeError, match="exit status 2"):
        sweep.main([*argv, "--variant=bad: total_steps=fail"])
    assert not (tmp_path / "sweep" / "bad" / sweep.RESULT_FILE).exists()
    for variant, message in [
        ("no_colon", "NAME: KEY=VALUE"),
        ("a b: x=1", "without spaces"),
        ("x: width", "is not KEY=VALUE"),
    ]:
        with pytest.raises(SystemExit, match=message):
            sweep.main([*argv, f"--variant={variant}"])
    with pytest.raises(SystemExit, match="must differ"):
        sweep.main([*argv, "--variant=a: x=1", "--variant=a: x=2"])
