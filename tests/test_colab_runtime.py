"""The notebooks' install decisions (`colab/runtime.py`) against simulated runtimes: the package
sets of a Colab CPU, GPU and TPU runtime and a bare laptop, with the project's real
`requirements.txt`: nothing the runtime has is downgraded, no `tensorflow-cpu` joins a
`tensorflow`, jax comes with the accelerator's extra, what is missing is installed."""

import os

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from colab import runtime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUIREMENTS = runtime.read_requirements(os.path.join(ROOT, "requirements.txt"))
BY_NAME = {r.name: r for r in REQUIREMENTS}


def _above(name):
    """A version above the project's upper bound for `name` (a runtime newer than our range)."""
    (upper,) = [s for s in BY_NAME[name].specifier if s.operator == "<"]
    v = Version(upper.version)
    return f"{v.major}.{v.minor + 2}.0"


def _inside(name):
    (lower,) = [s for s in BY_NAME[name].specifier if s.operator == ">="]
    return lower.version


# what each runtime ships (canonical names), as Colab's images do: jax and TensorFlow, no flax etc.
RUNTIMES = {
    "colab_cpu": ("cpu", {"jax": _above("jax"), "jaxlib": _above("jaxlib"), "tensorflow": "2.19.0",
                          "numpy": "2.0.2", "matplotlib": "3.10.0", "pillow": "11.3.0"}),
    "colab_gpu": ("gpu", {"jax": _above("jax"), "jaxlib": _above("jaxlib"),
                          "jax-cuda12-plugin": _above("jax"), "tensorflow": _inside("tensorflow-cpu"),
                          "numpy": "2.0.2"}),
    "colab_tpu": ("tpu", {"jax": _above("jax"), "jaxlib": _above("jaxlib"), "libtpu": "0.0.21",
                          "numpy": "2.0.2"}),
    "laptop": ("cpu", {}),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(RUNTIMES))
def test_nothing_is_downgraded_and_one_tensorflow(name):
    accel, installed = RUNTIMES[name]
    found = runtime.plan(REQUIREMENTS, installed, accel)
    wanted = {Requirement(w).name for w in found.install}
    for dist, version in installed.items():  # what the runtime has is never asked for again...
        if dist in wanted:  # ...unless it is too old for the project
            req = next(
                r for r in REQUIREMENTS if dist in runtime.SAME_IMPORT.get(r.name, (r.name,))
            )
            assert not req.specifier.contains(Version(version)) and not runtime._newer(
                req, Version(version)
            ), (dist, version)
    assert "tensorflow-cpu" not in wanted or "tensorflow" not in installed
    assert "jaxlib" not in wanted  # jax's extra brings it
    # every requirement is either kept or installed
    for req in REQUIREMENTS:
        if req.name in runtime.WITH_JAX:
            continue
        names = {req.name, *runtime.SAME_IMPORT.get(req.name, ())}
        assert names & wanted or any(k.split()[0] in names for k in found.kept), req.name
    assert found.line().startswith("runtime packages kept: ")


def _names(found):
    return {Requirement(w).name for w in found.install}


def test_what_each_runtime_gets():
    cpu = runtime.plan(REQUIREMENTS, *reversed(RUNTIMES["colab_cpu"]))
    assert any(k.startswith(f"jax {_above('jax')} (newer than the tested") for k in cpu.kept)
    assert "tensorflow" in _names(cpu) and "tensorflow-cpu" not in _names(cpu)  # 2.19: too old
    assert "flax" in _names(cpu)  # missing: installed
    gpu = runtime.plan(REQUIREMENTS, *reversed(RUNTIMES["colab_gpu"]))
    assert f"tensorflow {_inside('tensorflow-cpu')}" in gpu.kept
    assert not _names(gpu) & {"jax", "jaxlib", "tensorflow", "tensorflow-cpu"}
    laptop = runtime.plan(REQUIREMENTS, {}, "cpu")
    assert {"jax", "tensorflow-cpu"} <= _names(laptop) and "jaxlib" not in _names(laptop)
    bare_gpu = runtime.plan(REQUIREMENTS, {}, "gpu")
    bare_tpu = runtime.plan(REQUIREMENTS, {}, "tpu")
    assert any(w.startswith("jax[cuda12]") for w in bare_gpu.install)
    assert any(w.startswith("jax[tpu]") for w in bare_tpu.install)


def test_an_old_tensorflow_is_upgraded_under_its_own_name():
    found = runtime.plan(REQUIREMENTS, {"tensorflow": "2.10.0"}, "cpu")
    assert "tensorflow" in _names(found) and "tensorflow-cpu" not in _names(found)


def test_the_install_commands_end_with_the_project_without_its_dependencies():
    commands, found = runtime.install_commands(ROOT, "python3")
    assert commands[-1] == ["python3", "-m", "pip", "install", "-q", "--no-deps", "-e", ROOT]
    assert (len(commands) == 2) == bool(found.install)
