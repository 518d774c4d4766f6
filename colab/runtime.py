"""What the notebooks' install cell installs on a runtime as it comes (Colab CPU / GPU / TPU, a
TPU VM, a laptop), decided from the packages already there and `requirements.txt`.

A runtime ships its own jax (with its accelerator's plugin) and TensorFlow; installing the project
with pip's resolver would downgrade the one and add `tensorflow-cpu` beside the other. Instead:
- a requirement the runtime satisfies is kept;
- a distribution newer than the tested range is kept too (never a downgrade), and said;
- `tensorflow-cpu` is satisfied by an installed `tensorflow` (one import, one distribution), and an
  installed `tensorflow` too old is upgraded under its own name, never joined by `tensorflow-cpu`;
- jax, missing or too old, comes with the accelerator's extra (`jax[cuda12]`, `jax[tpu]`) and
  brings its jaxlib; `jaxlib` is not installed on its own;
- everything else missing or too old is installed as `requirements.txt` says;
then the project itself with `--no-deps`, and one line says what was kept and what installed.
Standard library and `packaging` only: it runs before anything of the project is installed.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

# a requirement that another installed distribution satisfies (the same import name)
SAME_IMPORT = {"tensorflow-cpu": ("tensorflow", "tensorflow-cpu")}
JAX_FOR = {"cpu": "jax", "gpu": "jax[cuda12]", "tpu": "jax[tpu]"}
WITH_JAX = ("jaxlib",)  # installed by jax's own extra, never alone


@dataclasses.dataclass
class Plan:
    """`install`: pip arguments (requirement strings); `kept`: 'name version' notes."""

    install: list[str]
    kept: list[str]

    def line(self) -> str:
        kept = ", ".join(self.kept) or "nothing"
        installed = ", ".join(self.install) or "nothing else"
        return f"runtime packages kept: {kept}; installed: {installed}"


def read_requirements(path: str) -> list[Requirement]:
    """The requirement lines of a requirements file (comments, blank and `-r` lines skipped)."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith("-"):
                out.append(Requirement(line))
    return out


def installed_packages() -> dict[str, str]:
    """{canonical distribution name: version} of this Python environment."""
    return {
        canonicalize_name(d.metadata["Name"]): d.version
        for d in metadata.distributions()
        if d.metadata["Name"]
    }


def accelerator() -> str:
    """'gpu' (nvidia-smi on PATH), 'tpu' (/dev/accel0 or a Colab TPU address) or 'cpu'."""
    if shutil.which("nvidia-smi"):
        return "gpu"
    if os.path.exists("/dev/accel0") or "COLAB_TPU_ADDR" in os.environ:
        return "tpu"
    return "cpu"


def _newer(requirement: Requirement, version: Version) -> bool:
    """True when `version` is above an upper bound of the requirement (`<`, `<=`, `==`)."""
    return any(
        spec.operator in ("<", "<=", "==", "~=") and version > Version(spec.version)
        for spec in requirement.specifier
    )


def plan(requirements: list[Requirement], installed: dict[str, str], accel: str) -> Plan:
    """What to keep and what to install (see the module docstring)."""
    install, kept = [], []
    for req in requirements:
        name = canonicalize_name(req.name)
        if name in WITH_JAX:
            continue
        have = [(n, installed[n]) for n in SAME_IMPORT.get(name, (name,)) if n in installed]
        if have:
            dist, version = have[0]
            v = Version(version)
            if req.specifier.contains(v, prereleases=True):
                kept.append(f"{dist} {version}")
                continue
            if _newer(req, v):
                kept.append(f"{dist} {version} (newer than the tested {req.specifier})")
                continue
            target = dist  # too old: upgraded under the name it has (no second distribution)
        else:
            target = name
        if name == "jax":
            install.append(f"{JAX_FOR[accel]}{req.specifier}")
        else:
            extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
            install.append(f"{target}{extras}{req.specifier}")
    return Plan(install=install, kept=kept)


def install_commands(root: str, python: str) -> tuple[list[list[str]], Plan]:
    """The pip commands the install cell runs for the checkout at `root` on this runtime."""
    found = plan(
        read_requirements(os.path.join(root, "requirements.txt")), installed_packages(), accelerator()
    )
    pip = [python, "-m", "pip", "install", "-q"]
    commands = [[*pip, *found.install]] if found.install else []
    commands.append([*pip, "--no-deps", "-e", root])
    return commands, found
