"""The Colab notebooks (`colab/*.ipynb`) run: each is executed top to bottom by nbclient in a fresh
Jupyter kernel with `RUNLOCAL=1` (Fashion-MNIST, runlocal sizes, no install, no network), so a
notebook that breaks fails CI, and one that leaves files behind too. Also: committed without
outputs, no link to a placeholder repository, one `parameters` cell.

The kernel is a subprocess and gets this process's environment, with two changes: one CPU device
(the suite's 8 simulated devices are dropped from XLA_FLAGS: a Colab GPU runtime has one, and the
compiles are cheaper) and the suite's persistent compilation cache passed as JAX_* variables
(conftest sets it through `jax.config`, which a subprocess does not inherit).
"""

import json
import os
import re
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLAB = os.path.join(ROOT, "colab")
NOTEBOOKS = sorted(f for f in os.listdir(COLAB) if f.endswith(".ipynb"))
EXPECTED = {"quickstart", "compare_methods", "export_to_pytorch", "augmentations"}
TIMEOUT_S = 600  # per cell


def _load(name):
    with open(os.path.join(COLAB, name)) as f:
        return json.load(f)


def test_notebooks_are_there_and_stripped():
    assert {os.path.splitext(n)[0] for n in NOTEBOOKS} >= EXPECTED
    for name in NOTEBOOKS:
        nb = _load(name)
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                assert cell["outputs"] == [], f"{name}: committed with outputs (strip them)"
                assert cell["execution_count"] is None, f"{name}: execution counts"
        text = json.dumps(nb)
        assert "OWNER" not in text, f"{name}: a placeholder repository (a dead link)"
        tagged = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])]
        assert len(tagged) == 1 and "RUNLOCAL" in "".join(tagged[0]["source"]), name
        installs = [
            c
            for c in nb["cells"]
            if c["cell_type"] == "code"
            and re.search(r'"-m", "pip", "install"|^\s*[%!]pip ', "".join(c["source"]), re.M)
        ]
        assert len(installs) == 1, f"{name}: one install cell"


@pytest.fixture
def kernel_env(monkeypatch, tmp_path):
    flags = re.sub(
        r"--xla_force_host_platform_device_count=\d+", "", os.environ.get("XLA_FLAGS", "")
    )
    monkeypatch.setenv("XLA_FLAGS", flags.strip())
    monkeypatch.setenv("RUNLOCAL", "1")
    monkeypatch.setenv("SSL_JAX_ROOT", ROOT)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    cache = os.environ.get("SSL_JAX_TEST_CACHE", os.path.join(ROOT, ".jax_cache"))
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", cache)
    monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")
    monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs(name, kernel_env):
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    nb = nbformat.read(os.path.join(COLAB, name), as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": COLAB}}
    )
    t0 = time.time()
    client.execute()  # raises CellExecutionError with the cell's traceback; then the kernel exits
    print(f"{name}: {time.time() - t0:.0f} s")
    text = "".join(
        out.get("text", "") for c in nb.cells if c.cell_type == "code" for out in c.outputs
    )
    assert "RUNLOCAL = 1" in text
    left = os.listdir(os.environ["TMPDIR"])
    assert not left, f"{name} left {left} in its TMPDIR"
