"""The real tfds prepare path, offline (no `mock_data`): the `imagenet2012` builder prepares tiny
ILSVRC2012 tars made here from `manual_dir` and an ImageNet config trains two steps on them; the
`cifar10` / `cifar100` / `stl10` builders prepare tiny archives of their own binary layouts put
in `manual_dir` (tfds reads a set's archive from there by its file name; the test registers the
fake archive's checksum in place of the real one, the only stand-in); an `image_folder` run
trains two steps; a set that is neither prepared nor downloadable ends in one `error:` line and
exit status 2 within seconds, leaving no workdir.

These fail where the set-up's requirements miss a module the prepare path imports (tfds 4.9.10
needs `importlib_resources`, through etils, and does not declare it)."""

from __future__ import annotations

import io
import os
import tarfile
import time

import numpy as np
import pytest
from PIL import Image

from ssl_jax.data import datasets
from ssl_jax.data.sources import tfds_source
from tests.helpers import error_lines, run_main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SYNSETS = ("n01440764", "n01443537", "n01484850")  # the first three of ImageNet's 1,000 classes
PER_CLASS, NUM_VAL = 4, 6


def _jpeg(rng, height: int, width: int) -> bytes:
    out = io.BytesIO()
    pixels = rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(out, format="JPEG")
    return out.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def make_imagenet_archives(folder: str, seed: int = 0) -> str:
    """`ILSVRC2012_img_train.tar` (one tar per class, JPEGs of varied sizes named as ImageNet's)
    and `ILSVRC2012_img_val.tar` (`ILSVRC2012_val_0000000k.JPEG`, labelled by tfds's own
    validation label list) in `folder`, as image-net.org ships them."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder, exist_ok=True)
    with tarfile.open(os.path.join(folder, "ILSVRC2012_img_train.tar"), "w") as train:
        for synset in SYNSETS:
            inner = io.BytesIO()
            with tarfile.open(fileobj=inner, mode="w") as class_tar:
                for i in range(PER_CLASS):
                    _add(class_tar, f"{synset}_{i}.JPEG", _jpeg(rng, 40 + 4 * i, 48))
            _add(train, f"{synset}.tar", inner.getvalue())
    with tarfile.open(os.path.join(folder, "ILSVRC2012_img_val.tar"), "w") as val:
        for i in range(1, NUM_VAL + 1):
            _add(val, f"ILSVRC2012_val_{i:08d}.JPEG", _jpeg(rng, 44, 36 + 2 * i))
    return folder


def _run_main(*args: str, timeout: int = 300):
    return run_main(*args, timeout=timeout)


TWO_SMALL_STEPS = (
    "--config.total_steps=2",
    "--config.global_batch_size=4",
    "--config.model.backbone=resnet18",
    "--config.model.width=0.125",
    "--config.log_every_steps=1",
)


@pytest.mark.slow
def test_imagenet_from_manual_dir_prepares_and_trains_two_steps(tmp_path):
    """The README's ImageNet command, small: `configs/mocov2_imagenet.py` with `manual_dir` holding
    the two tars; the real `imagenet2012` builder prepares them into `data_dir`, the run trains two
    steps and checkpoints."""
    manual = make_imagenet_archives(str(tmp_path / "manual"))
    data_dir, workdir = tmp_path / "tfds", tmp_path / "run"
    result = _run_main(
        "--config=configs/mocov2_imagenet.py",
        f"--workdir={workdir}",
        f"--config.data.data_dir={data_dir}",
        f"--config.data.manual_dir={manual}",
        *TWO_SMALL_STEPS,
        "--config.method_config.queue_size=16",
        "--config.method_config.query_bn_group_size=2",
        "--config.method_config.key_bn_group_size=2",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "preparing imagenet2012" in result.stdout and "step 2/2" in result.stdout
    assert os.listdir(workdir / "checkpoints") == ["2"]
    prepared = os.listdir(data_dir / "imagenet2012")
    assert prepared and all(not name.startswith("incomplete") for name in prepared)
    config = datasets_config("imagenet2012", str(data_dir), manual)
    assert datasets.num_examples(config, "train") == len(SYNSETS) * PER_CLASS
    assert datasets.num_examples(config, "validation") == NUM_VAL
    labels = sorted(
        int(e["label"]) for e in datasets.load_source(config, "train").as_numpy_iterator()
    )
    assert labels == [0] * PER_CLASS + [1] * PER_CLASS + [2] * PER_CLASS  # the synsets' indices


def test_imagenet_batch_larger_than_the_split_is_one_error_line(tmp_path):
    """The README's ImageNet command on a small `manual_dir` with a global batch larger than its
    12 training images: one `error:` line naming the batch and the example count, exit status 2,
    before anything compiles (no traceback, no workdir left)."""
    manual = make_imagenet_archives(str(tmp_path / "manual"))
    workdir = tmp_path / "run"
    result = _run_main(
        "--config=configs/mocov2_imagenet.py",
        f"--workdir={workdir}",
        f"--config.data.data_dir={tmp_path / 'tfds'}",
        f"--config.data.manual_dir={manual}",
        "--config.total_steps=1000",
        "--config.global_batch_size=64",
    )
    # stderr: tfds's progress bars while it prepares the set, then the one error line
    lines = [line for line in error_lines(result.stderr) if line.startswith("error:")]
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-3000:]
    assert result.stderr.rstrip().endswith(lines[0])
    n = len(SYNSETS) * PER_CLASS
    assert lines[0].startswith(
        f"error: config.global_batch_size=64 exceeds the {n} training examples"
    ), lines
    assert "Traceback" not in result.stderr and not workdir.exists()
    assert "compiling" not in result.stdout + result.stderr


def datasets_config(name: str, data_dir: str, manual_dir: str = ""):
    import ml_collections

    return ml_collections.ConfigDict(
        dict(name=name, data_dir=data_dir, manual_dir=manual_dir, cache=False)
    )


@pytest.mark.slow
def test_image_folder_trains_two_steps(tmp_path):
    rng = np.random.default_rng(1)
    for split, n in (("train", 6), ("test", 4)):
        for label in ("cat", "dog"):
            folder = tmp_path / "images" / split / label
            folder.mkdir(parents=True)
            for i in range(n):
                (folder / f"{i}.jpg").write_bytes(_jpeg(rng, 30 + i, 34))
    workdir = tmp_path / "run"
    result = _run_main(
        "--config=configs/mocov2_imagenet.py",
        f"--workdir={workdir}",
        "--config.data.name=image_folder",
        f"--config.data.data_dir={tmp_path / 'images'}",
        "--config.data.eval_test_split=test",
        *TWO_SMALL_STEPS,
        "--config.method_config.queue_size=16",
        "--config.method_config.query_bn_group_size=2",
        "--config.method_config.key_bn_group_size=2",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "step 2/2" in result.stdout and os.listdir(workdir / "checkpoints") == ["2"]


# ---- the other tfds sets from archives in manual_dir ---------------------------------------------


def _cifar_archive(path: str, name: str, counts: dict[str, int], rng) -> dict[str, np.ndarray]:
    """A `cifar-10-binary.tar.gz` / `cifar-100-binary.tar.gz` of the official binary layout
    (a record = label byte(s) then 3 × 32 × 32 channel-major pixels); returns each split's images
    [N, 32, 32, 3] in file order."""
    ten = name == "cifar10"
    prefix = "cifar-10-batches-bin" if ten else "cifar-100-binary"
    files = (
        {"train": [f"data_batch_{i}.bin" for i in range(1, 6)], "test": ["test_batch.bin"]}
        if ten
        else {"train": ["train.bin"], "test": ["test.bin"]}
    )
    names = (
        {"batches.meta.txt": 10}
        if ten
        else {"coarse_label_names.txt": 20, "fine_label_names.txt": 100}
    )
    images = {}
    with tarfile.open(path, "w:gz") as tar:
        for split, split_files in files.items():
            images[split] = []
            for file in split_files:
                chw = rng.integers(0, 256, (counts[split], 3, 32, 32), dtype=np.uint8)
                labels = np.arange(counts[split], dtype=np.uint8)[:, None] % 10
                labels = labels if ten else np.concatenate([labels % 20, labels], axis=1)
                records = np.concatenate([labels, chw.reshape(len(chw), -1)], axis=1)
                _add(tar, f"{prefix}/{file}", records.tobytes())
                images[split].append(chw.transpose(0, 2, 3, 1))
            images[split] = np.concatenate(images[split])
        for file, n in names.items():
            _add(tar, f"{prefix}/{file}", "\n".join(f"class_{i}" for i in range(n)).encode())
    return images


def _stl10_archive(path: str, counts: dict[str, int], rng) -> dict[str, np.ndarray]:
    """`stl10_binary.tar.gz`: `{split}_X.bin` (uint8 [N, 3, 96, 96], column-major images),
    `{split}_y.bin` (labels 1..10), `class_names.txt`."""
    images = {}
    with tarfile.open(path, "w:gz") as tar:
        for split, n in counts.items():
            raw = rng.integers(0, 256, (n, 3, 96, 96), dtype=np.uint8)
            _add(tar, f"stl10_binary/{split}_X.bin", raw.tobytes())
            if split != "unlabeled":
                _add(
                    tar,
                    f"stl10_binary/{split}_y.bin",
                    (np.arange(n) % 10 + 1).astype(np.uint8).tobytes(),
                )
            images[split] = raw.transpose(0, 3, 2, 1)
        _add(tar, "stl10_binary/class_names.txt", "\n".join(f"c{i}" for i in range(10)).encode())
    return images


@pytest.mark.parametrize("name", ["cifar10", "cifar100", "stl10"])
def test_a_tfds_set_prepares_from_its_archive_in_manual_dir(tmp_path, monkeypatch, name):
    """The real builder extracts and parses an archive of the set's own layout from `manual_dir`
    (what a user with the archive but no network does) and our loader reads back its pixels."""
    import tensorflow_datasets as tfds

    rng = np.random.default_rng(2)
    builder_cls = tfds.builder_cls(name)
    (url,) = builder_cls.url_infos  # a class property
    filename = url.rsplit("/", 1)[-1]
    manual = tmp_path / "manual"
    manual.mkdir()
    archive = str(manual / filename)
    if name == "stl10":
        images = _stl10_archive(archive, {"train": 3, "test": 2, "unlabeled": 2}, rng)
        splits = {"train": "train", "test": "test", "unlabelled": "unlabeled"}
    else:
        images = _cifar_archive(archive, name, {"train": 2, "test": 3}, rng)
        splits = {"train": "train", "test": "test"}
    # the one stand-in: tfds checks a manual archive against the real file's registered checksum
    info = tfds.core.download.checksums.compute_url_info(archive)
    info = type(info)(size=info.size, checksum=info.checksum, filename=filename)
    monkeypatch.setattr(builder_cls, "url_infos", {url: info})
    monkeypatch.setattr(tfds_source, "_unreachable", lambda urls, **kw: pytest.fail("no download"))
    config = datasets_config(name, str(tmp_path / "tfds"), str(manual))
    datasets.prepare(config)
    for ours, theirs in splits.items():
        pixels, labels = datasets.load_arrays(config, ours)
        # tfds shuffles examples into its shards: compare as sets of images
        got = sorted(p.tobytes() for p in pixels)
        assert got == sorted(p.tobytes() for p in images[theirs]), (name, ours)
        assert (labels == -1).all() if ours == "unlabelled" else (labels >= 0).all()


# ---- no data, no network -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_set_that_cannot_be_had_is_one_error_line_before_anything_is_written(tmp_path):
    """CIFAR-10, not prepared in an empty `data_dir`, no network here (CI and this machine have
    none; where a machine has, the download host answers and this test is skipped)."""
    if not tfds_source._unreachable(["https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"]):
        pytest.skip("this machine reaches www.cs.toronto.edu: cifar10 would download")
    empty, workdir = tmp_path / "empty", tmp_path / "run"
    empty.mkdir()
    start = time.time()
    result = _run_main(
        "--config=configs/mocov2_cifar10.py",
        f"--workdir={workdir}",
        f"--config.data.data_dir={empty}",
        timeout=120,
    )
    assert result.returncode == 2, result.stderr[-3000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: cifar10 is not prepared in "), lines
    for words in (str(empty), "~/tensorflow_datasets/cifar10", "--config.data.manual_dir"):
        assert words in lines[0]
    assert "image_folder" in lines[0] and "cifar-10-binary.tar.gz" in lines[0]
    assert not workdir.exists()
    assert time.time() - start < 60


def test_no_network_is_found_fast_and_said_in_the_error(tmp_path, monkeypatch):
    """The reachability check answers within its time-out for a host that never answers, and a
    set that needs a download then raises the one-line error before tfds starts."""
    import socket

    never = socket.socket()
    never.bind(("127.0.0.1", 0))
    never.listen(0)  # accepts no connection: a firewall that drops packets
    never.settimeout(0)
    url = f"http://127.0.0.1:{never.getsockname()[1]}/cifar-10-binary.tar.gz"
    start = time.time()
    why = tfds_source._unreachable([url], timeout=1.0)
    assert why and time.time() - start < 3
    import tensorflow_datasets as tfds

    builder_cls = tfds.builder_cls("cifar10")
    monkeypatch.setattr(builder_cls, "url_infos", {url: None})
    monkeypatch.setattr(tfds_source, "REACH_TIMEOUT_S", 1.0)
    called = []
    monkeypatch.setattr(builder_cls, "download_and_prepare", lambda *a, **k: called.append(1))
    config = datasets_config("cifar10", str(tmp_path / "tfds"))
    with pytest.raises(datasets.DataError, match="cifar10 is not prepared in .* cannot be"):
        datasets.prepare(config)
    assert not called
    never.close()


def test_the_requirements_hold_what_the_prepare_path_imports():
    """tfds' builders import these when they prepare (not when tfds is imported)."""
    import importlib

    for module in ("importlib_resources", "tensorflow_datasets.core.download.downloader"):
        importlib.import_module(module)
    requirements = open(os.path.join(ROOT, "requirements.txt")).read()
    assert "importlib-resources" in requirements
