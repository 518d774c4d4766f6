"""The floor of the tested jax range (requirements.txt's `jax>=X`, the accelerator image's jax): the
README's default job at runlocal size trains, checkpoints and probes on jax X as on the set-up's
newer jax. jax X and its jaxlib are installed from PyPI once into a cache folder that shadows the
venv's jax (PYTHONPATH); everything else is the venv's. Skipped when PyPI cannot be reached, except
where SSL_JAX_REQUIRE_JAX_FLOOR=1 (CI)."""

import os
import re
import subprocess
import sys

import pytest

from tests.process_env import xla_flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def floor_version() -> str:
    """X of `jax>=X,...` in requirements.txt, with jaxlib's floor checked to be the same."""
    text = open(os.path.join(ROOT, "requirements.txt")).read()
    floors = dict(re.findall(r"^(jax|jaxlib)>=([0-9.]+)", text, flags=re.M))
    assert floors.keys() == {"jax", "jaxlib"}, "requirements.txt names no jax / jaxlib floor"
    assert floors["jax"] == floors["jaxlib"], f"jax and jaxlib floors differ: {floors}"
    return floors["jax"]


def test_floor_matches_pyproject():
    pyproject = open(os.path.join(ROOT, "pyproject.toml")).read()
    assert f'"jax>={floor_version()},' in pyproject


@pytest.fixture(scope="module")
def floor_site():
    """A folder holding jax and jaxlib at the floor (installed once, kept in the user's cache)."""
    version = floor_version()
    cache = os.environ.get("SSL_JAX_CACHE", os.path.expanduser("~/.cache/ssl_jax"))
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    site = os.path.join(cache, f"jax-floor-{version}-{tag}")
    if not os.path.isfile(os.path.join(site, "jax", "version.py")):
        pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", site]
        done = subprocess.run(
            [*pip, f"jax=={version}", f"jaxlib=={version}"], capture_output=True, text=True
        )
        if done.returncode != 0:
            if os.environ.get("SSL_JAX_REQUIRE_JAX_FLOOR") == "1":
                pytest.fail(f"jax {version} not installable: {done.stderr[-2000:]}")
            pytest.skip(f"jax {version} not installable here (no PyPI?)")
    return version, site


def test_default_job_runs_on_the_floor(floor_site, tmp_path):
    version, site = floor_site
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([site, ROOT]),
        TF_CPP_MIN_LOG_LEVEL="2",
        XLA_FLAGS=xla_flags(2),
    )
    seen = subprocess.run(
        [sys.executable, "-c", "import jax, jaxlib; print(jax.__version__, jaxlib.__version__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert seen == [version, version], f"the floor site did not shadow the venv's jax: {seen}"
    workdir = tmp_path / "floor"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "ssl_jax.main",
            "--config=configs/mocov2_fashion_mnist.py:runlocal",
            f"--workdir={workdir}",
            "--config.total_steps=6",
            "--config.checkpoint_every_steps=3",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-4000:]
    assert re.search(r"^pretrained\s+\d+\.\d+%", out, flags=re.M), out[-4000:]
    assert os.path.isdir(workdir / "checkpoints"), os.listdir(workdir)
