"""The official-code harness (`experiments/official/`) against fake "official" packages
(`fake_official/moco`, `fake_official/jcl`: the official entry points and the CUDA /
torch.distributed calls, not the official code): the shims make it run on one CPU process and are undone after; the queue, EMA and
optimiser advance as the trainer calls them; our recipe becomes the transform classes in order; a
missing or other-commit checkout is one clear error; an official cell is written by the runner and
scored by the same probe and kNN as ours. No test needs the network or a real checkout."""

from __future__ import annotations

import json
import os
import sys

import numpy as np
import pytest

from experiments import campaign, grids
from experiments.official import checkouts, harness, runner
from tests.data.data_helpers import make_fashion_dir

FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_official", "moco")
FAKE_JCL = os.path.join(os.path.dirname(FAKE), "jcl")
FAKE_SCE = os.path.join(os.path.dirname(FAKE), "sce")
FAKE_RESSL = os.path.join(os.path.dirname(FAKE), "ressl")


def _numbers(fashion_dir: str, **over) -> dict:
    numbers = dict(
        method="mocov2",
        fashion_dir=fashion_dir,
        train_subset=32,
        size=28,
        channels=1,
        mean=[0.286],
        std=[0.353],
        ops=[],
        width=0.125,
        stem="imagenet",
        feature_dim=8,
        hidden=8,
        out_dim=4,
        queue=16,
        temperature=0.2,
        momentum_ema=0.9,
        batch=8,
        steps=6,
        lr=0.06,
        weight_decay=5e-4,
        momentum=0.9,
        seed=0,
    )
    return {**numbers, **over}


def _tiny_encoder(torch, monkeypatch):
    """A tiny `base_encoder(num_classes=dim)` with an `fc`; the recipe's transform replaced by
    ToTensor + Normalize on the grey image (torchvision is not needed here)."""

    class Encoder(torch.nn.Module):
        def __init__(self, num_classes):
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 8, 3, 2, 1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.fc = torch.nn.Linear(8, num_classes)

        def forward(self, x):
            return self.fc(self.bn(self.conv(x)).relu().amax((2, 3)))  # max: images differ

    def to_tensor(image):  # noise: a view's augmentation (JCL's M' keys of one image differ)
        x = (torch.from_numpy(np.asarray(image, np.float32) / 255)[None] - 0.286) / 0.353
        return x + 0.5 * torch.randn(x.shape)

    monkeypatch.setattr(harness, "ops_to_transforms", lambda ops, mean, std: to_tensor)
    for name in [n for n in sys.modules if n.split(".")[0] in ("moco", "main_moco")]:
        monkeypatch.delitem(sys.modules, name)
    return Encoder


def test_the_shims_run_the_official_entry_points_on_one_cpu_process(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    fashion = make_fashion_dir(str(tmp_path / "fashion"), num_train=40, num_test=10)

    Encoder = _tiny_encoder(torch, monkeypatch)
    cuda, module_cuda = torch.Tensor.cuda, torch.nn.Module.cuda
    numbers = _numbers(fashion)
    model, curve, extra = harness.train_mocov2(FAKE, numbers, base_encoder=Encoder)
    # 40 images, batch 8: 5 steps an epoch, 6 steps = 2 epochs (the second cut at one batch)
    assert int(model.queue_ptr) == (6 * 8) % 16
    assert torch.allclose(model.queue.norm(dim=0), torch.ones(16), atol=1e-5)
    q = dict(model.encoder_q.named_parameters())
    k = dict(model.encoder_k.named_parameters())
    assert not torch.equal(q["conv.weight"], k["conv.weight"])  # EMA, not a copy
    assert curve == [] and extra == {}  # LOG_EVERY is 20: no point in 6 steps
    # the shims are undone: CUDA calls fail again on this CPU torch
    assert torch.Tensor.cuda is cuda and torch.nn.Module.cuda is module_cuda
    builder = sys.modules["moco.builder"]
    assert builder.concat_all_gather.__name__ == "concat_all_gather"
    assert sys.modules["main_moco"].accuracy is harness.topk_accuracy
    if not torch.cuda.is_available():
        with pytest.raises((AssertionError, RuntimeError)):
            torch.zeros(1).cuda()
    # features: the pooled backbone (the --mlp head set aside, then put back), every image once
    x, y = harness.features(model.encoder_q, numbers, "test")
    assert (
        x.shape == (10, 8)
        and y.shape == (10,)
        and isinstance(model.encoder_q.fc, torch.nn.Sequential)
    )


def test_the_jcl_shims_run_its_entry_points_with_m_plus_one_views(tmp_path, monkeypatch):
    """JCL's `train` as its `main_moco.py` calls it: each step's key batch is the M' key crops of
    `MultiCropsTransform(k_crops=M' + 1)`, the queue receives mean keys, λ is the official
    per-epoch ramp, the curve is of ce + jcl_loss; MoCo's checkout in the same process first (both
    have a `moco` package) does not shadow JCL's."""
    torch = pytest.importorskip("torch")
    fashion = make_fashion_dir(str(tmp_path / "fashion"), num_train=40, num_test=10)
    Encoder = _tiny_encoder(torch, monkeypatch)
    harness.train_mocov2(FAKE, _numbers(fashion), base_encoder=Encoder)
    monkeypatch.setattr(harness, "LOG_EVERY", 2)
    cuda = torch.Tensor.cuda
    numbers = _numbers(fashion, method="jcl", steps=7, num_keys=3, lam=2.0)
    model, curve, extra = harness.train_jcl(FAKE_JCL, numbers, base_encoder=Encoder)
    assert sys.modules["moco"].__file__.startswith(FAKE_JCL)
    assert type(model).__name__ == "MoCoUnlimitedKeysDefault"
    assert model.keys_per_query == [3] * 7  # M' = 3 key crops a query, every step
    # 40 images, batch 8: 5 steps an epoch, 7 steps = 2 epochs, λ·(epoch + 1)/2 each
    assert extra == {"lambda_per_epoch": [1.0, 2.0]}
    assert int(model.queue_ptr) == (7 * 8) % 16
    # every column was written by now, with a mean of unit keys: norm < 1 (not re-normalised)
    assert bool((model.queue.norm(dim=0) < 1 - 1e-5).all())
    assert [step for step, _ in curve] == [2, 4, 6] and all(np.isfinite(v) for _, v in curve)
    assert torch.Tensor.cuda is cuda
    jcl = sys.modules["moco.moco_unlimit_key_default"]
    assert jcl.concat_all_gather.__name__ == "concat_all_gather"
    assert sys.modules["main_moco"].logger is not None
    x, y = harness.features(model.encoder_q, numbers, "train")
    assert x.shape == (40, 8) and y.shape == (40,)


def test_the_jcl_curve_is_of_the_loss_the_optimiser_steps_on(monkeypatch):
    """`LoggedLoss` with JCL's `extra`: the logged value is ce + jcl_loss, the returned loss the
    criterion's alone (the trainer adds jcl_loss itself)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(harness, "LOG_EVERY", 1)
    logged = harness.LoggedLoss(torch.nn.CrossEntropyLoss(), lambda: torch.tensor(0.25))
    output, target = torch.tensor([[2.0, 0.0]]), torch.tensor([0])
    ce = float(torch.nn.functional.cross_entropy(output, target))
    assert float(logged(output, target)) == pytest.approx(ce)
    assert logged.curve == [[1, round(ce + 0.25, 5)]]


def _marked_views(torch, monkeypatch):
    """The recipe's transform as the image in [0, 1] plus 10 × its number of ops: a view's values
    say which recipe made it (weak: 2 ops → [20, 21], strong: 3 ops → [30, 31])."""

    def transform(ops, mean, std):
        return lambda image: (
            torch.from_numpy(np.asarray(image, np.float32) / 255)[None] + 10 * len(ops)
        )

    monkeypatch.setattr(harness, "ops_to_transforms", transform)


WEAK_STRONG = dict(
    view_ops=[[{"op": "a"}] * 2, [{"op": "b"}] * 3], temperature_m=0.05, key_bn_splits=2
)


def _in(value: float, low: float) -> bool:
    return low <= value <= low + 1


def test_the_sce_shims_run_its_entry_points_weak_view_to_the_target(tmp_path, monkeypatch):
    """SCE's `training_step` gets `batch["input"]` = [weak, strong] (view 0 to the momentum
    network), the stand-in `sce.utils.strategies` answers one device, `MultiCropTransform` loads
    although its package cannot import, and each step runs training_step → step → the EMA of
    `on_train_batch_end`, as Lightning calls them; the trunk is ours (by `_target_`)."""
    torch = pytest.importorskip("torch")
    from experiments.official import train_sce

    fashion = make_fashion_dir(str(tmp_path / "fashion"), num_train=40, num_test=10)
    Encoder = _tiny_encoder(torch, monkeypatch)
    _marked_views(torch, monkeypatch)
    monkeypatch.setattr(harness, "LOG_EVERY", 2)

    def tiny_trunk(width, stem, channels):
        module = Encoder(num_classes=1)
        module.fc = torch.nn.Identity()
        return module

    monkeypatch.setattr(train_sce, "trunk", tiny_trunk)
    numbers = _numbers(fashion, method="scce", steps=7, coeff=0.5, **WEAK_STRONG)
    model, curve, extra = train_sce.train_scce(FAKE_SCE, numbers)
    assert len(model.seen_views) == 7 and model.momentum_steps == 7
    assert all(_in(weak, 20) and _in(strong, 30) for weak, strong in model.seen_views)
    assert int(model.queue_ptr) == (7 * 8) % 16
    assert sys.modules["sce.utils.strategies"].get_num_devices_in_trainer(None) == 1
    assert model.splits == 2 and model.temp_m == 0.05 and model.coeff == 0.5
    q = dict(model.trunk.named_parameters())
    k = dict(model.momentum_trunk.named_parameters())
    assert not torch.equal(q["conv.weight"], k["conv.weight"])
    assert [step for step, _ in curve] == [2, 4, 6] and all(np.isfinite(v) for _, v in curve)
    assert extra["encoder"] is model.trunk
    x, y = harness.features(extra["encoder"], numbers, "test")
    assert x.shape == (10, 8) and y.shape == (10,)


def test_the_ressl_shims_run_its_train_with_the_strong_view_online(tmp_path, monkeypatch):
    """ReSSL's `train` gets `(img1, img2)` = (strong, weak) as its ImageNet data set gives them,
    its command line is our numbers, no warm-up, and the cut last epoch keeps its full length
    (the per-iteration lr reads it); the CUDA / distributed calls are shimmed and undone."""
    torch = pytest.importorskip("torch")
    from experiments.official import train_ressl

    fashion = make_fashion_dir(str(tmp_path / "fashion"), num_train=40, num_test=10)
    Encoder = _tiny_encoder(torch, monkeypatch)
    _marked_views(torch, monkeypatch)
    monkeypatch.setattr(harness, "LOG_EVERY", 2)
    cuda, argv = torch.Tensor.cuda, list(sys.argv)
    numbers = _numbers(fashion, method="ressl", steps=7, train_subset=40, **WEAK_STRONG)
    model, curve, extra = train_ressl.train_ressl(FAKE_RESSL, numbers, base_encoder=Encoder)
    assert len(model.views) == 7
    assert all(_in(online, 30) and _in(target, 20) for online, target in model.views)
    assert int(model.queue_ptr) == (7 * 8) % 16
    script = sys.modules["ressl"]
    assert (script.args.t, script.args.lr, script.epochs, script.warm_up) == (0.05, 0.06, 2, 0)
    # 5 steps an epoch, 2 epochs: lr = 0.03 (1 + cos(π T / 10)), T = 5 · epoch + i
    expected = [0.03 * (1 + np.cos(np.pi * t / 10)) for t in range(7)]
    assert script.lrs == pytest.approx(expected)
    assert [step for step, _ in curve] == [2, 4, 6]
    assert torch.Tensor.cuda is cuda and sys.argv == argv
    assert sys.modules["network.ressl"].concat_all_gather.__name__ == "concat_all_gather"
    assert extra["encoder"] is model.encoder_q.net
    assert model.encoder_q.head[0].out_features == numbers["hidden"]


def test_the_ressl_optimiser_groups_leave_bn_and_bias_undecayed():
    torch = pytest.importorskip("torch")
    from experiments.official import train_ressl

    model = torch.nn.Module()
    model.conv = torch.nn.Conv2d(1, 2, 3, bias=False)
    model.bn1 = torch.nn.BatchNorm2d(2)
    model.fc = torch.nn.Linear(2, 2)
    no_decay, decay = train_ressl.param_groups(model, 5e-4)
    assert no_decay["weight_decay"] == 0 and decay["weight_decay"] == 5e-4
    assert {id(p) for p in no_decay["params"]} == {
        id(model.bn1.weight),
        id(model.bn1.bias),
        id(model.fc.bias),
    }
    assert {id(p) for p in decay["params"]} == {id(model.conv.weight), id(model.fc.weight)}


class _Recorder:
    """A stand-in for `torchvision.transforms`: each class records its arguments."""

    def __getattr__(self, name):
        def make(*args, **kwargs):
            return (name, args, kwargs)

        return make


def test_our_recipe_becomes_the_transform_classes_in_order():
    ops = [
        {"op": "random_resized_crop", "size": 28, "scale": (0.2, 1.0)},
        {"op": "horizontal_flip", "p": 0.5},
        {"op": "color_jitter", "p": 0.8, "brightness": 0.4, "contrast": 0.4},
        {"op": "grayscale", "p": 0.2},
    ]
    name, (steps,), _ = harness.ops_to_transforms(ops, [0.5], [0.25], transforms=_Recorder())
    assert name == "Compose"
    assert steps[0] == ("RandomResizedCrop", (28,), {"scale": (0.2, 1.0)})
    assert steps[1] == ("RandomHorizontalFlip", (), {"p": 0.5})
    assert steps[2] == ("RandomApply", ([("ColorJitter", (0.4, 0.4, 0, 0), {})],), {"p": 0.8})
    assert steps[3] == ("RandomGrayscale", (), {"p": 0.2})
    assert steps[4:] == [("ToTensor", (), {}), ("Normalize", (), {"mean": [0.5], "std": [0.25]})]
    with pytest.raises(SystemExit, match="gaussian_blur"):
        harness.ops_to_transforms([{"op": "gaussian_blur"}], [0], [1], transforms=_Recorder())


@pytest.mark.parametrize(
    "name, repo, commit",
    [
        ("moco", "facebookresearch/moco", "78b69caf"),
        ("jcl", "caiqi/Joint-Contrastive-Learning", "1cefabb8"),
        ("sce", "CEA-LIST/SCE", "07cbe636"),
        ("ressl", "KyleZheng1997/ReSSL", "4d67daaa"),
    ],
)
def test_a_missing_or_other_commit_checkout_is_one_clear_error(tmp_path, name, repo, commit):
    with pytest.raises(SystemExit, match=rf"no checkout of {repo} .* git clone"):
        checkouts.check(name, str(tmp_path))
    (tmp_path / name).mkdir()
    files = checkouts.CHECKOUTS[name].files
    with pytest.raises(SystemExit, match=rf"has no {files[0][0]}: not {repo} at {commit}"):
        checkouts.check(name, str(tmp_path))
    for path, _ in files:
        (tmp_path / name / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name / path).write_text("# another commit\n")
    with pytest.raises(SystemExit, match=rf"differs from {repo} at {commit}"):
        checkouts.check(name, str(tmp_path))
    assert checkouts.shim_hash(name) == checkouts.shim_hash(name) != ""
    assert checkouts.shim_hash("jcl") != checkouts.shim_hash("moco")
    assert all(len(row) == 3 and ":" in row[0] for row in checkouts.SHIMS[name])
    method = {"moco": "mocov2", "jcl": "jcl", "sce": "scce", "ressl": "ressl"}[name]
    assert harness.METHODS[method][0] == name


@pytest.mark.parametrize(
    "method, checkout",
    [("mocov2", "moco"), ("jcl", "jcl"), ("scce", "sce"), ("ressl", "ressl")],
)
def test_an_official_cell_is_scored_as_ours_and_written(tmp_path, monkeypatch, method, checkout):
    """The runner reads the harness's features (here made up, as if the official run had
    finished: a finished run's features are reused), scores them with our probe and kNN, and the
    campaign writes the cell with the official fields; the numbers it hands the harness are our
    config's."""
    from ssl_jax.evaluate.evaluators import probe_and_knn, probe_args

    grid = grids.OFFICIAL_CPU_LONG
    cell = next(c for c in grids.cells(grid) if c.method == method)
    assert [c.kind for c in grids.cells(grid)] == ["train"] * 12  # no baselines: cpu_long's
    config = campaign.cell_config(grid, cell)[0]
    numbers = runner.numbers(config, method)
    assert (numbers["steps"], numbers["batch"], numbers["lr"], numbers["train_subset"]) == (
        3000,
        64,
        0.06,
        10_000,
    )
    temperature = 0.1 if method in ("scce", "ressl") else 0.2
    assert (numbers["queue"], numbers["temperature"], numbers["momentum_ema"]) == (
        4096,
        temperature,
        0.99,
    )
    assert (numbers["width"], numbers["stem"], numbers["hidden"]) == (0.5, "imagenet", 256)
    if method == "jcl":  # the released script's M' (k_crops 5) and λ; 5 views of one recipe
        assert (numbers["num_keys"], numbers["lam"]) == (4, 2.0)
        assert len(config.data.views) == 5
        config.method_config.lam_schedule = "constant"
        with pytest.raises(SystemExit, match="ramps λ per epoch"):
            runner.numbers(config, method)
        config.method_config.lam_schedule = "linear_epoch"
    elif method in ("scce", "ressl"):  # view 0 the weak recipe (→ target), view 1 the strong
        weak, strong = (config.data.recipes[v] for v in config.data.views)
        assert numbers["view_ops"] == [[dict(op) for op in weak], [dict(op) for op in strong]]
        assert [op["op"] for op in numbers["view_ops"][1]][-1] == "color_jitter"
        assert numbers["temperature_m"] == {"scce": 0.05, "ressl": 0.04}[method]
        assert numbers["key_bn_splits"] == 8 and numbers.get("coeff") == (
            0.5 if method == "scce" else None
        )
        config.method_config.symmetric = True
        with pytest.raises(SystemExit, match="asymmetric"):
            runner.numbers(config, method)
        config.method_config.symmetric = False
    else:
        assert "num_keys" not in numbers and "view_ops" not in numbers
    rng = np.random.default_rng(0)
    train = (rng.normal(size=(200, 16)).astype(np.float32), rng.integers(0, 10, 200))
    test = (rng.normal(size=(50, 16)).astype(np.float32), rng.integers(0, 10, 50))
    workdir = tmp_path / "work" / grid.name / cell.name
    workdir.mkdir(parents=True)
    np.savez(
        workdir / "features.npz", train_x=train[0], train_y=train[1], test_x=test[0], test_y=test[1]
    )
    run = dict(loss_curve=[[20, 7.0]], steps=3000, pretrain_s=1.0, pretrain_cpu_s=2.0, versions="v")
    if method == "jcl":
        run["lambda_per_epoch"] = [0.1 * (e + 1) for e in range(20)]
    (workdir / "run.json").write_text(json.dumps(run))
    monkeypatch.setattr(campaign, "_fresh_workdir", lambda workdir, digest: None)
    record = campaign.run_cell(grid, cell, str(tmp_path / "work"))
    pt = config.evals.probe_table
    ours = probe_and_knn(
        train, test, **probe_args(pt), knn_k=pt.knn_k, knn_temperature=pt.knn_temperature
    )
    assert record["probe_top1"] == round(float(ours["top1"]), 6)
    assert record["knn_top1"] == round(float(ours["knn_top1"]), 6)
    assert record["official_commit"] == checkouts.CHECKOUTS[checkout].commit
    assert record["shim_hash"] == checkouts.shim_hash(checkout)
    assert record.get("lambda_per_epoch") == run.get("lambda_per_epoch")
    assert record["probe_protocol"] == campaign.grid_protocol(grid)
    assert record["loss_curve"] == [[20, 7.0]] and record["feature_dim"] == 16
    path = campaign.write_cell(str(tmp_path / "cells"), cell, record)
    assert json.load(open(path))["official_repo"] == checkouts.CHECKOUTS[checkout].repo
