"""launch/build_detectron2.sh with a stand-in Python (no compiler run): Detectron2 is built once
per commit, torch and Python into the cache, a second set-up installs the cached wheel without
building, an importable Detectron2 is left alone, and each failure is one line and exit status 1."""

import os
import stat
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "launch", "build_detectron2.sh")

# A 'python' that logs its calls: torch importable (or not, $FAKE_NO_TORCH), detectron2 importable
# once `pip install` ran ($FAKE_STATE/installed), `pip wheel -w DIR` writes a wheel (or fails).
FAKE_PYTHON = r"""#!/usr/bin/env bash
echo "$*" >> "$FAKE_STATE/calls"
case "$*" in
  *"import torch; print"*) [ -n "${FAKE_NO_TORCH:-}" ] && exit 1; echo 2.14.1; exit 0 ;;
  *"import detectron2"*) [ -f "$FAKE_STATE/installed" ]; exit $? ;;
  *"import sys; print"*) echo cp311; exit 0 ;;
  *"pip wheel"*)
    [ -n "${FAKE_BUILD_FAILS:-}" ] && { echo "error: g++ failed"; exit 1; }
    while [ $# -gt 0 ]; do [ "$1" = -w ] && dir=$2; shift; done
    touch "$dir/detectron2-0.6-cp311-cp311-linux_x86_64.whl"; exit 0 ;;
  *"pip install"*) touch "$FAKE_STATE/installed"; exit 0 ;;
esac
exit 0
"""


def _run(tmp_path, state, **env):
    python = tmp_path / "python"
    if not python.exists():
        python.write_text(FAKE_PYTHON)
        python.chmod(python.stat().st_mode | stat.S_IEXEC)
    state.mkdir(exist_ok=True)
    full = {**os.environ, "FAKE_STATE": str(state), "SSL_JAX_CACHE": str(tmp_path / "cache"), **env}
    return subprocess.run(
        ["bash", SCRIPT, str(python), str(tmp_path / "detectron2.tar.gz"), "02b5c4e2"],
        capture_output=True, text=True, env=full,
    )  # fmt: skip


def _calls(state):
    return (state / "calls").read_text() if (state / "calls").exists() else ""


def test_built_once_then_installed_from_the_cache(tmp_path):
    first = tmp_path / "first_venv"
    run = _run(tmp_path, first)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "building detectron2 02b5c4e2" in run.stdout and "built detectron2-0.6" in run.stdout
    wheel = tmp_path / "cache/wheels/detectron2-02b5c4e2-torch2.14.1-cp311"
    assert [p.name for p in wheel.iterdir()] == ["detectron2-0.6-cp311-cp311-linux_x86_64.whl"]
    assert "pip wheel" in _calls(first) and "--no-build-isolation" in _calls(first)
    # a fresh environment on the same machine: the cached wheel, no build
    second = tmp_path / "second_venv"
    run = _run(tmp_path, second)
    assert run.returncode == 0 and "building" not in run.stdout
    assert "pip wheel" not in _calls(second) and "pip install" in _calls(second)
    # an environment that has it: nothing at all
    before = _calls(second)
    assert _run(tmp_path, second).returncode == 0
    assert "pip" not in _calls(second)[len(before) :]


def test_each_failure_is_one_line(tmp_path):
    run = _run(tmp_path, tmp_path / "a", FAKE_NO_TORCH="1")
    assert run.returncode == 1 and run.stdout.strip().startswith("detectron2 not installed:")
    assert "torch is not installed" in run.stdout
    run = _run(tmp_path, tmp_path / "b", FAKE_BUILD_FAILS="1")
    lines = run.stdout.strip().splitlines()
    assert run.returncode == 1 and lines[1].startswith("detectron2 not installed: its build")
    assert "error: g++ failed" in run.stdout  # the log's last lines follow
    assert not (
        tmp_path / "cache/wheels/detectron2-02b5c4e2-torch2.14.1-cp311"
    ).exists() or not any(
        (tmp_path / "cache/wheels/detectron2-02b5c4e2-torch2.14.1-cp311").iterdir()
    )


def test_the_setup_builds_it_and_ci_requires_it():
    setup = open(os.path.join(ROOT, "launch", "setup.sh")).read()
    assert "launch/build_detectron2.sh" in setup and "DETECTRON2_REQUIRED" in setup
    assert "DETECTRON2_COMMIT=02b5c4e295e990042a714712c21dc79b731e8833" in setup
    ci = open(os.path.join(ROOT, ".ci", "run")).read()
    assert "DETECTRON2_REQUIRED=1" in ci and "SSL_JAX_REQUIRE_DETECTRON2=1" in ci
    assert "import detectron2" in ci
