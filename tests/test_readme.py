"""The README's fenced shell commands that take seconds run as written: every `--help`, and the
`:runlocal` pretraining (its `--workdir=` pointed at a temporary folder; `python` is this
interpreter). Every `python -m ssl_jax.main --config=...` command's config loads with its
`--config.` overrides (pretraining configs also validate), without running."""

import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def readme_commands(text: str) -> list[str]:
    """The commands of the README's ```bash blocks: continuation lines joined, comments dropped."""
    commands = []
    for block in re.findall(r"^```(?:bash|sh)\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line and not line.startswith("#"):
                commands.append(line)
    return commands


README_COMMANDS = readme_commands(open(os.path.join(ROOT, "README.md"), encoding="utf-8").read())
HELP = [c for c in README_COMMANDS if c.startswith("python ") and c.endswith(" --help")]
RUNLOCAL = [
    c for c in README_COMMANDS if c.startswith("python -m ssl_jax.main") and ":runlocal" in c
]
MAIN = [c for c in README_COMMANDS if c.startswith("python -m ssl_jax.main --config=")]


def _env() -> dict:
    """A user's shell: one CPU device (not the test session's 8 simulated ones)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("XLA_FLAGS", None)
    return env


def _argv(command: str) -> list[str]:
    argv = shlex.split(command)
    assert argv[0] == "python", command
    return [sys.executable, *argv[1:]]


def test_the_readme_has_the_commands_this_file_runs():
    assert len(HELP) >= 2 and len(RUNLOCAL) == 1 and len(MAIN) >= 4, README_COMMANDS


@pytest.mark.parametrize("command", HELP)
def test_help_commands_run(command):
    proc = subprocess.run(
        _argv(command), cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120
    )
    out = proc.stdout + proc.stderr
    # absl prints the help and exits with status 1
    assert proc.returncode in (0, 1), out
    assert "--workdir" in out and "Traceback" not in out, out


@pytest.mark.slow
def test_the_runlocal_command_runs(tmp_path):
    (command,) = RUNLOCAL
    argv = [
        f"--workdir={tmp_path / 'run'}" if a.startswith("--workdir=") else a for a in _argv(command)
    ]
    proc = subprocess.run(argv, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert out.startswith(":runlocal trains on "), out
    steps = re.findall(r"^step (\d+)/(\d+) ", out, re.MULTILINE)
    assert steps and steps[-1][0] == steps[-1][1], out
    assert os.path.isdir(tmp_path / "run" / "checkpoints")


@pytest.mark.parametrize("command", MAIN)
def test_main_commands_name_a_config_and_keys_that_exist(command):
    from ssl_jax import configs, validation

    argv = shlex.split(command)
    spec = next(a.partition("=")[2] for a in argv if a.startswith("--config="))
    config = configs.load(os.path.join(ROOT, spec))
    for a in argv:
        if a.startswith("--config."):
            configs.apply_override(config, a[len("--config.") :])
    if config.job == "pretrain":
        validation.validate(config, num_devices=8)
