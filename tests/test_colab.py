"""The Colab notebooks (`colab/*.ipynb`) run: each is executed top to bottom by nbclient in a fresh
Jupyter kernel with `RUNLOCAL=1` (Fashion-MNIST, runlocal sizes, no install, no network), so a
notebook that breaks fails CI, and one that leaves files behind too; the quickstart's CIFAR-10
branch (`RUNLOCAL=0`, the full config shrunk by overrides) runs too, through tfds' real prepare
path from a fake `cifar-10-binary.tar.gz` in `manual_dir`. Also: committed without outputs, no
link to a placeholder repository, one `parameters` cell, one install cell.

The kernel is a subprocess and gets this process's environment (the suite's compile cache and
fast compiles: tests/process_env.py) with one CPU device: the suite's 8 simulated devices are
dropped from XLA_FLAGS (a Colab GPU runtime has one, and the compiles are cheaper).
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
            and re.search(
                r'"-m", "pip", "install"|^\s*[%!]pip |runtime\.install_commands',
                "".join(c["source"]),
                re.M,
            )
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


# Registered in the kernel before the notebook's first cell (an IPython startup file): the one
# stand-in, as in tests/data/sources/test_tfds_prepare.py, tfds' registered checksum of the real archive
# replaced by the fake's, so that tfds' own prepare takes the archive from manual_dir.
CHECKSUM_STARTUP = """
import tensorflow_datasets as tfds
_cls = tfds.builder_cls("cifar10")
(_url,) = _cls.url_infos
_info = tfds.core.download.checksums.compute_url_info({archive!r})
_cls.url_infos = {{_url: type(_info)(size=_info.size, checksum=_info.checksum,
                                     filename="cifar-10-binary.tar.gz")}}
"""


@pytest.mark.slow
def test_the_quickstarts_cifar10_branch_runs_through_the_tfds_prepare_path(kernel_env, tmp_path):
    nbclient = pytest.importorskip("nbclient")
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    import numpy as np

    from tests.data.sources.test_tfds_prepare import _cifar_archive

    manual = tmp_path / "manual"
    manual.mkdir()
    archive = str(manual / "cifar-10-binary.tar.gz")
    _cifar_archive(archive, "cifar10", {"train": 64, "test": 120}, np.random.default_rng(0))
    startup = tmp_path / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-fake-cifar-checksum.py").write_text(CHECKSUM_STARTUP.format(archive=archive))
    work = tmp_path / "work"
    overrides = [
        f"data.manual_dir={manual}",
        f"data.data_dir={tmp_path / 'tfds'}",
        "model.width=0.125",
        "global_batch_size=32",
        "method_config.query_bn_group_size=8",
        "method_config.key_bn_group_size=8",
        "method_config.queue_size=128",
        "data.shuffle_buffer=64",
    ]
    env = {
        "RUNLOCAL": "0",
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "SSL_JAX_OVERRIDES": " ".join(overrides),
        "SSL_JAX_STEPS": "2",
        "SSL_JAX_TSNE_POINTS": "100",
    }
    for key, value in env.items():
        os.environ[key] = value  # kernel_env's monkeypatch restores RUNLOCAL; the rest below
    try:
        nb = nbformat.read(os.path.join(COLAB, "quickstart.ipynb"), as_version=4)
        source = "".join(nb.cells[3].source).replace('"/content/runs/quickstart"', repr(str(work)))
        nb.cells[3].source = source  # the Colab branch's workdir, here a scratch folder
        client = nbclient.NotebookClient(
            nb, timeout=TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": COLAB}}
        )
        client.execute()
    finally:
        for key in env:
            if key != "RUNLOCAL":
                os.environ.pop(key, None)
    text = "".join(
        out.get("text", "") for c in nb.cells if c.cell_type == "code" for out in c.outputs
    )
    assert "RUNLOCAL = 0" in text and "sce cifar10 resnet18" in text
    assert "| cifar10 (test) | top-1 (%) |" in text and "steps 2" in text
    assert os.path.isdir(tmp_path / "tfds" / "cifar10")  # prepared by tfds from the archive
    assert (work / "checkpoints").is_dir()
