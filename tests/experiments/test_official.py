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
import types

import numpy as np
import pytest

from experiments import campaign_cells, campaign_runner, grids
from experiments.official import checkouts, common, harness, runner, train_moco
from tests.data.data_helpers import make_fashion_dir

FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_official", "moco")
FAKE_JCL = os.path.join(os.path.dirname(FAKE), "jcl")
FAKE_RING = os.path.join(os.path.dirname(FAKE), "ring")
FAKE_SCE = os.path.join(os.path.dirname(FAKE), "sce")
FAKE_RESSL = os.path.join(os.path.dirname(FAKE), "ressl")
FAKE_MMSELFSUP = os.path.join(os.path.dirname(FAKE), "mmselfsup")
FAKE_CMC = os.path.join(os.path.dirname(FAKE), "cmc")


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

    monkeypatch.setattr(common, "ops_to_transforms", lambda ops, mean, std: to_tensor)
    for name in [n for n in sys.modules if n.split(".")[0] in ("moco", "main_moco")]:
        monkeypatch.delitem(sys.modules, name)
    return Encoder


def test_the_shims_run_the_official_entry_points_on_one_cpu_process(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    fashion = make_fashion_dir(str(tmp_path / "fashion"), num_train=40, num_test=10)

    Encoder = _tiny_encoder(torch, monkeypatch)
    cuda, module_cuda = torch.Tensor.cuda, torch.nn.Module.cuda
    numbers = _numbers(fashion)
    model, curve, extra = train_moco.train_mocov2(FAKE, numbers, base_encoder=Encoder)
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
    assert sys.modules["main_moco"].accuracy is train_moco.topk_accuracy
    if not torch.cuda.is_available():
        with pytest.raises((AssertionError, RuntimeError)):
            torch.zeros(1).cuda()
    # features: the pooled backbone (the --mlp head set aside, then put back), every image once
    x, y = common.features(model.encoder_q, numbers, "test")
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
    train_moco.train_mocov2(FAKE, _numbers(fashion), base_encoder=Encoder)
    monkeypatch.setattr(common, "LOG_EVERY", 2)
    cuda = torch.Tensor.cuda
    numbers = _numbers(fashion, method="jcl", steps=7, num_keys=3, lam=2.0)
    model, curve, extra = train_moco.train_jcl(FAKE_JCL, numbers, base_encoder=Encoder)
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
    x, y = common.features(model.encoder_q, numbers, "train")
    assert x.shape == (40, 8) and y.shape == (40,)


def test_the_jcl_curve_is_of_the_loss_the_optimiser_steps_on(monkeypatch):
    """`LoggedLoss` with JCL's `extra`: the logged value is ce + jcl_loss, the returned loss the
    criterion's alone (the trainer adds jcl_loss itself)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(common, "LOG_EVERY", 1)
    logged = common.LoggedLoss(torch.nn.CrossEntropyLoss(), lambda: torch.tensor(0.25))
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

    monkeypatch.setattr(common, "ops_to_transforms", transform)


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
    monkeypatch.setattr(common, "LOG_EVERY", 2)

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
    x, y = common.features(extra["encoder"], numbers, "test")
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
    monkeypatch.setattr(common, "LOG_EVERY", 2)
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
    name, (steps,), _ = common.ops_to_transforms(ops, [0.5], [0.25], transforms=_Recorder())
    assert name == "Compose"
    assert steps[0] == ("RandomResizedCrop", (28,), {"scale": (0.2, 1.0)})
    assert steps[1] == ("RandomHorizontalFlip", (), {"p": 0.5})
    assert steps[2] == ("RandomApply", ([("ColorJitter", (0.4, 0.4, 0, 0), {})],), {"p": 0.8})
    assert steps[3] == ("RandomGrayscale", (), {"p": 0.2})
    assert steps[4:] == [("ToTensor", (), {}), ("Normalize", (), {"mean": [0.5], "std": [0.25]})]
    with pytest.raises(SystemExit, match="gaussian_blur"):
        common.ops_to_transforms([{"op": "gaussian_blur"}], [0], [1], transforms=_Recorder())


@pytest.mark.parametrize(
    "name, repo, commit",
    [
        ("moco", "facebookresearch/moco", "78b69caf"),
        ("jcl", "caiqi/Joint-Contrastive-Learning", "1cefabb8"),
        ("ring", "mhw32/contrastive-ring-public", "fb3e1c26"),
        ("sce", "CEA-LIST/SCE", "07cbe636"),
        ("ressl", "KyleZheng1997/ReSSL", "4d67daaa"),
        ("mmselfsup", "open-mmlab/mmselfsup", "920deff1"),
        ("cmc", "HobbitLong/CMC", "7b227be0"),
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
    method = {
        "moco": "mocov2",
        "jcl": "jcl",
        "ring": "iring",
        "sce": "scce",
        "ressl": "ressl",
        "mmselfsup": "interclr",
        "cmc": "cmc",
    }[name]
    assert harness.METHODS[method][0] == name


@pytest.mark.parametrize(
    "method, checkout",
    [
        ("mocov2", "moco"),
        ("jcl", "jcl"),
        ("scce", "sce"),
        ("ressl", "ressl"),
        ("interclr", "mmselfsup"),
        ("interclr+offline", "mmselfsup"),
    ],
)
def test_an_official_cell_is_scored_as_ours_and_written(tmp_path, monkeypatch, method, checkout):
    """The runner reads the harness's features (here made up, as if the official run had
    finished: a finished run's features are reused), scores them with our probe and kNN, and the
    campaign writes the cell with the official fields; the numbers it hands the harness are our
    config's."""
    from ssl_jax.evaluate.evaluators import probe_and_knn, probe_args

    grid = grids.OFFICIAL_CPU_LONG
    cell = next(c for c in grids.cells(grid) if c.method == method)
    assert {c.kind for c in grids.cells(grid)} == {"train"}  # no baselines: cpu_long's
    config = campaign_cells.cell_config(grid, cell)[0]
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
    monkeypatch.setattr(campaign_runner, "_fresh_workdir", lambda workdir, digest: None)
    record = campaign_runner.run_cell(grid, cell, str(tmp_path / "work"))
    pt = config.evals.probe_table
    ours = probe_and_knn(
        train, test, **probe_args(pt), knn_k=pt.knn_k, knn_temperature=pt.knn_temperature
    )
    assert record["probe_top1"] == round(float(ours["top1"]), 6)
    assert record["knn_top1"] == round(float(ours["knn_top1"]), 6)
    assert record["official_commit"] == checkouts.CHECKOUTS[checkout].commit
    assert record["shim_hash"] == checkouts.shim_hash(checkout)
    assert record.get("lambda_per_epoch") == run.get("lambda_per_epoch")
    assert record["probe_protocol"] == campaign_cells.grid_protocol(grid)
    assert record["loss_curve"] == [[20, 7.0]] and record["feature_dim"] == 16
    path = campaign_cells.write_cell(str(tmp_path / "cells"), cell, record)
    assert json.load(open(path))["official_repo"] == checkouts.CHECKOUTS[checkout].repo


# ---- the Ring code (fake_official/ring: its systems, bank, queue, policies, lr callback) --------


def _ring_numbers(fashion_dir: str, method: str, **over) -> dict:
    """`_numbers` with the Ring code's keys (`ring.config_numbers`' names)."""
    if method == "mocoring":
        ring_keys = dict(system="PretrainMoCoSystem", loss="MoCoRing", k=16, m=0.9)
    else:
        ring_keys = dict(
            system="PretrainNCESystem", loss="NCERing", k=5, m=0.0, bank_init="uniform"
        )
    ring_keys.update(thres_outer=0.1, thres_inner=0.1, linear_anneal=False, max_anneal_epoch=1.0)
    return _numbers(fashion_dir, method=method, **{**ring_keys, **over})


class _Pooled:
    """A tiny `base_encoder(num_classes)` whose children end in a pooling then `fc`, as
    `CustomResNet` takes torchvision's resnet apart."""

    def __new__(cls, torch, num_classes):
        net = torch.nn.Sequential(
            torch.nn.Conv2d(1, 8, 3, 2, 1),
            torch.nn.BatchNorm2d(8),
            torch.nn.ReLU(),
            torch.nn.AdaptiveMaxPool2d(1),
        )
        net.fc = torch.nn.Linear(8, num_classes)
        return net


def test_the_ring_systems_train_as_lightning_steps_them(tmp_path, monkeypatch):
    """IR's system (`NCE` on the bank) and MoCoRing's (queue, EMA) stepped as Lightning's
    one-process `fit`: `global_step` counts each step (the linear outer threshold reads it), the lr
    callback sets the cosine at each epoch's start, `m = 0` replaces the bank rows, our normal bank
    init replaces `_create`; the Lightning and cv2 stand-ins are gone after."""
    torch = pytest.importorskip("torch")
    fashion = make_fashion_dir(str(tmp_path / "fashion"), num_train=40, num_test=10)
    _tiny_encoder(torch, monkeypatch)
    monkeypatch.setattr(common, "LOG_EVERY", 2)
    encoder = lambda num_classes: _Pooled(torch, num_classes)  # noqa: E731
    numbers = _ring_numbers(fashion, "iring", steps=7, linear_anneal=True, bank_init="normal")
    model, curve, extra = harness.METHODS["iring"][1](FAKE_RING, numbers, base_encoder=encoder)
    system = model.system
    # 40 images, batch 8: 5 steps an epoch, 7 steps = 2 epochs (the second cut at 2 batches)
    assert system.global_step == 7 and [s for s, _ in curve] == [2, 4, 6]
    seen = system.seen_thresholds  # the fake's linear policy: 1.0 → 0.1 over half the 10 steps
    assert seen[0] == 1.0 and seen == sorted(seen, reverse=True) and seen[-1] == pytest.approx(0.1)
    assert extra == {"thres_outer_per_epoch": [1.0, pytest.approx(0.1)]}
    # the callback's cosine (use_cosine_scheduler) over 2 epochs, set at each epoch's start
    assert sys.modules["src.utils.callbacks"].MoCoLRScheduler.history == [(0, 0.06), (1, 0.03)]
    memory = sys.modules["src.objectives.memory"]
    assert memory.MemoryBank._create.__qualname__.startswith("normal_rows")
    assert "pytorch_lightning" not in sys.modules and "cv2" not in sys.modules
    x, y = common.features(model.encoder_q, numbers, "test")
    assert x.shape == (10, 8) and y.shape == (10,)

    numbers = _ring_numbers(fashion, "mocoring", steps=6)
    model, curve, extra = harness.METHODS["mocoring"][1](FAKE_RING, numbers, base_encoder=encoder)
    system = model.system
    assert int(system.queue_ptr) == (6 * 8) % 16 and system.global_step == 6
    q, k = dict(system.model.named_parameters()), dict(system.model_k.named_parameters())
    assert not torch.equal(q["features.0.weight"], k["features.0.weight"])  # EMA, not a copy
    assert (
        sys.modules["src.objectives.memory"].MemoryBank._create.__qualname__ == "MemoryBank._create"
    )
    assert extra == {"thres_outer_per_epoch": [0.1, 0.1]}


def test_the_ring_data_path_gives_the_recipes_views(tmp_path, monkeypatch):
    """`get_datasets` in the Ring code's place: the official dataset classes around our subset
    (the first `train_subset` images) through the recipe's transform, one view with its index for
    IR, two independent views for MoCoRing."""
    torch = pytest.importorskip("torch")
    from experiments.official import ring

    fashion = make_fashion_dir(str(tmp_path / "fashion"), num_train=40, num_test=10)
    _tiny_encoder(torch, monkeypatch)
    asked = []
    transform = common.ops_to_transforms
    monkeypatch.setattr(common, "ops_to_transforms", lambda *a: asked.append(a) or transform(*a))
    numbers = _ring_numbers(fashion, "iring", ops=[{"op": "horizontal_flip"}])
    with ring.stand_ins([], 20):
        (datasets,) = common.import_official(FAKE_RING, "src.datasets.datasets")
    get_datasets = ring.official_datasets(datasets, numbers)
    assert asked == [(numbers["ops"], numbers["mean"], numbers["std"])]
    images, labels = common.read_subset(numbers)
    one, no_val = get_datasets(None, "cifar10")
    assert no_val is None and len(one) == 32 == len(images)
    index, view, label = one[5]
    assert (index, label, view.shape, view.dtype) == (5, labels[5], (1, 28, 28), torch.float32)
    two, _ = get_datasets(None, "cifar10_2views")
    index, a, b, label = two[7]
    assert index == 7 and label == labels[7] and not torch.equal(a, b)  # two draws of the recipe
    assert list(one.dataset.targets) == list(labels)  # what the system reads (systems.py:68)


def test_stored_views_are_read_in_order_and_never_past_the_last():
    """`StoredViews`: image i's r-th read is its stored view r through the transform; a read past
    the stored views is an error, not a reused view."""
    views = np.random.default_rng(0).integers(0, 256, (3, 4, 28, 28), dtype=np.uint8)
    stored = common.StoredViews(views, np.arange(4), lambda image: np.asarray(image))
    assert len(stored) == 4
    for r in range(3):
        view, label = stored[2]
        assert label == 2 and np.array_equal(view, views[r, 2])
    assert np.array_equal(stored[1][0], views[0, 1])  # each image counts its own reads
    with pytest.raises(RuntimeError, match="read 4 times; 3 views"):
        stored[2]


def test_our_views_are_our_pipelines_recipe_on_each_image(tmp_path):
    """`runner.write_our_views`: `reads` views of each image of the subset by our host ops: a
    certain flip gives the mirrored image (numpy's), a random crop differs between reads; a
    MoCoRing run of 3,000 steps on 10,000 images at batch 64 reads each image 40 times."""
    pytest.importorskip("tensorflow")
    fashion = make_fashion_dir(str(tmp_path / "fashion"), num_train=40, num_test=10)
    numbers = _numbers(fashion, ops=[{"op": "horizontal_flip", "p": 1.0}])
    path = str(tmp_path / "views.npy")
    runner.write_our_views(numbers, path, reads=2)
    images, _ = common.read_subset(numbers)
    views = np.load(path)
    assert views.shape == (2, 32, 28, 28) and views.dtype == np.uint8
    assert np.array_equal(views[0], images[:, :, ::-1]) and np.array_equal(views[1], views[0])
    crop = [{"op": "random_resized_crop", "size": 28, "scale": [0.2, 1.0]}]
    runner.write_our_views({**numbers, "ops": crop}, path, reads=2)
    views = np.load(path)
    assert (views[0] != views[1]).any(axis=(1, 2)).mean() > 0.9
    assert runner.reads_per_image(dict(train_subset=10_000, batch=64, steps=3000)) == 40


def test_a_ourviews_ring_cell_reads_the_stored_views(tmp_path, monkeypatch):
    """With `views_file` the Ring data path hands MoCoRing's two-view class the stored views (only
    ToTensor and Normalize after them), each read the next view of that image."""
    torch = pytest.importorskip("torch")
    from experiments.official import ring

    fashion = make_fashion_dir(str(tmp_path / "fashion"), num_train=40, num_test=10)
    asked = []
    to_array = lambda image: torch.from_numpy(np.asarray(image, np.float32))  # noqa: E731
    monkeypatch.setattr(common, "ops_to_transforms", lambda *a: asked.append(a) or to_array)
    views = np.random.default_rng(1).integers(0, 256, (4, 32, 28, 28), dtype=np.uint8)
    np.save(tmp_path / "views.npy", views)
    numbers = _ring_numbers(fashion, "mocoring", views_file=str(tmp_path / "views.npy"))
    numbers["ops"] = [{"op": "horizontal_flip"}]
    with ring.stand_ins([], 20):
        (datasets,) = common.import_official(FAKE_RING, "src.datasets.datasets")
    two, _ = ring.official_datasets(datasets, numbers)(None, "cifar10_2views")
    assert asked == [([], numbers["mean"], numbers["std"])]  # the recipe is not run again
    for epoch in range(2):
        index, a, b, _ = two[7]
        assert np.array_equal(a.numpy(), views[2 * epoch, 7])
        assert np.array_equal(b.numpy(), views[2 * epoch + 1, 7])


def test_the_ring_cells_hand_the_harness_our_numbers_or_the_codes():
    """`iring`, `ir`, `mocoring`: our config's numbers through the Ring code (k = our draws + 1,
    our bank momentum and normal init, our EMA); `iring+official`: the code's IR settings, the
    same as ours in `cpu_long_variants`' cell of that name."""
    grid = grids.OFFICIAL_CPU_LONG
    numbers = {}
    for cell in grids.cells(grid):
        if cell.seed == 0 and harness.METHODS[cell.method][0] == "ring":
            numbers[cell.method] = runner.numbers(
                campaign_cells.cell_config(grid, cell)[0], cell.method
            )
    keys = ("system", "loss", "k", "m", "bank_init", "temperature")
    pick = lambda n: tuple(n.get(key) for key in keys)  # noqa: E731
    assert pick(numbers["ir"]) == ("PretrainNCESystem", "NCE", 4097, 0.5, "normal", 0.07)
    assert pick(numbers["iring"]) == ("PretrainNCESystem", "NCERing", 4097, 0.5, "normal", 0.07)
    assert pick(numbers["iring+official"])[2:5] == (4096, 0.0, "uniform")
    assert pick(numbers["mocoring"]) == ("PretrainMoCoSystem", "MoCoRing", 4096, 0.99, None, 0.2)
    for method in ("iring", "iring+official", "mocoring"):
        ring_keys = [numbers[method][k] for k in ("thres_outer", "thres_inner", "linear_anneal")]
        assert ring_keys == [0.1, 0.1, False]
    assert "thres_outer" not in numbers["ir"]
    assert numbers["ir"]["train_subset"] == 10_000 and numbers["ir"]["steps"] == 3000
    variants = grids.GRIDS["cpu_long_variants"]
    cell = next(c for c in grids.cells(variants) if c.method == "iring+official")
    ours = runner.numbers(campaign_cells.cell_config(variants, cell)[0], "iring+official")
    assert ours == numbers["iring+official"]


def test_a_ring_cell_is_written_and_resumed(tmp_path, monkeypatch):
    """A Ring cell whose run finished (its features and run.json in the workdir) is scored and
    written without training again: the harness is never started."""
    grid = grids.OFFICIAL_CPU_LONG
    cell = next(c for c in grids.cells(grid) if c.method == "iring+official")
    workdir = tmp_path / "work" / grid.name / cell.name
    workdir.mkdir(parents=True)
    rng = np.random.default_rng(1)
    np.savez(
        workdir / "features.npz",
        train_x=rng.normal(size=(200, 16)).astype(np.float32),
        train_y=rng.integers(0, 10, 200),
        test_x=rng.normal(size=(50, 16)).astype(np.float32),
        test_y=rng.integers(0, 10, 50),
    )
    run = dict(loss_curve=[[20, 9.0]], steps=3000, pretrain_s=1.0, pretrain_cpu_s=2.0, versions="v")
    run["thres_outer_per_epoch"] = [0.1] * 20
    (workdir / "run.json").write_text(json.dumps(run))
    monkeypatch.setattr(campaign_runner, "_fresh_workdir", lambda workdir, digest: None)
    monkeypatch.setattr(runner, "official_python", lambda: pytest.fail("trained again"))
    record = campaign_runner.run_cell(grid, cell, str(tmp_path / "work"))
    assert record["official_repo"] == "mhw32/contrastive-ring-public"
    assert record["shim_hash"] == checkouts.shim_hash("ring") and record["steps"] == 3000
    assert 0 <= record["probe_top1"] <= 1 and record["loss_curve"] == [[20, 9.0]]
    path = campaign_cells.write_cell(str(tmp_path / "cells"), cell, record)
    assert json.load(open(path))["cell"] == "fashion_mnist.iring+official.s0"


def test_the_cpu_bench_fits_a_fixed_cost_and_a_cost_per_step():
    from experiments.official import bench_cpu

    fixed, per_step = bench_cpu.fit([(400, 10.0 + 0.25 * 400), (100, 10.0 + 0.25 * 100)])
    assert fixed == pytest.approx(10.0) and per_step == pytest.approx(0.25)
    with pytest.raises(ValueError):
        bench_cpu.fit([(100, 1.0), (100, 2.0)])
    with pytest.raises(SystemExit, match="two different step counts"):
        bench_cpu.main(["--steps=100,100"])
    with pytest.raises(SystemExit, match="no such method"):
        bench_cpu.main(["--methods=byol", "--steps=10,20"])


@pytest.mark.parametrize(
    "method, grid_name", [("mocoring", "official_cpu_long"), ("cmc", "official_cpu_long_color")]
)
def test_the_cpu_bench_times_the_official_cells_config_without_evaluators(method, grid_name):
    from experiments.official import bench_cpu

    config, full = bench_cpu.cell_config(method, 156)
    assert bench_cpu.GRIDS[method] == grid_name
    grid = grids.GRIDS[grid_name]
    (cell,) = [c for c in grids.cells(grid) if c.method == method and c.seed == 0]
    cell_config = campaign_cells.cell_config(grid, cell)[0]
    assert full == cell_config.total_steps == 3000 and config.total_steps == 156
    assert all(config.evals[name].every_steps == -1 for name in config.evals)
    assert runner.numbers(config, method) == {**runner.numbers(cell_config, method), "steps": 156}


def test_the_page_shows_the_cpu_bench_or_nothing(tmp_path):
    from experiments.official import bench_cpu, page

    path = str(tmp_path / "official_cpu_time.json")
    assert page.cpu_time_section(path) == []
    side = lambda minutes: dict(points=[], fixed_s=20.0, per_step_s=0.1, cell_min=minutes)
    bench = dict(
        date="2026-11-28",
        commit="0123456789abcdef",
        cores=[1],
        steps=[156, 624],
        command="taskset -c 1 python experiments/official/bench_cpu.py --steps=156,624",
        methods={
            "mocov2": dict(
                cell_steps=3000, official=side(9.0), ours=side(6.0), official_over_ours=1.5
            )
        },
    )
    with open(path, "w") as f:
        json.dump(bench, f)
    text = "\n".join(page.cpu_time_section(path))
    assert (
        "| mocov2 | 9.0 | 6.0 | 1.50 | 0.100, 20 | 0.100, 20 "
        "| 2026-11-28, `01234567`, 156 and 624 steps, CPU 1, command 1 |"
    ) in text
    assert "1. `taskset -c 1 python experiments/official/bench_cpu.py --steps=156,624`" in text
    # a later run of one method keeps the other rows as they were measured, and says its own
    later = dict(cell_steps=3000, official=side(5.0), ours=side(4.0), official_over_ours=1.25)
    later.update(date="2026-11-29", commit="fedcba9876543210", steps=[100, 400], cores=[0])
    later["command"] = "taskset -c 1 python experiments/official/bench_cpu.py --methods=iring"
    bench["methods"] = {**bench_cpu.measured_rows(path), "iring": later}
    with open(path, "w") as f:
        json.dump(bench, f)
    text = "\n".join(page.cpu_time_section(path))
    assert "| 2026-11-28, `01234567`, 156 and 624 steps, CPU 1, command 1 |" in text
    assert "| iring | 5.0 | 4.0 | 1.25 |" in text
    assert "| 2026-11-29, `fedcba98`, 100 and 400 steps, CPU 0, command 2 |" in text


def test_a_finding_is_its_files_paragraphs_or_nothing(tmp_path):
    from experiments.official import page

    (tmp_path / "mocov2.md").write_text("One line\nand its next.\n\n\nA second  paragraph.\n")
    paragraphs = ["One line and its next.", "A second paragraph."]
    assert page.finding("mocov2", str(tmp_path)) == paragraphs
    assert page.finding("jcl", str(tmp_path)) == []


def test_each_finding_is_under_its_methods_section_of_the_page(tmp_path, monkeypatch):
    from experiments.official import page

    names = sorted(f[: -len(".md")] for f in os.listdir(page.FINDINGS) if f.endswith(".md"))
    assert names, "no findings files"
    sections = {  # the methods the page gives a section (a '+ourviews' row is a side of one)
        m
        for official, _ in page.PAIRS
        for s in grids.GRIDS[official].sections
        for m, _ in s.methods
        if not m.endswith(runner.OUR_VIEWS)
    }
    assert set(names) <= sections, f"findings of no official row: {set(names) - sections}"
    monkeypatch.setattr(page, "loss_figure", lambda *args: False)  # the docs' figures stay
    path = tmp_path / "official.md"
    page.write(str(path))
    text = path.read_text()
    for method in names:
        section = text.partition(f"\n### {method} (")[2].partition("\n### ")[0]
        paragraphs = page.finding(method)
        assert paragraphs and all(f"\n\n{p}\n" in section for p in paragraphs), method


def test_a_trained_cell_is_read_by_its_name_and_only_ours():
    config, workdir, cell = campaign_cells.trained_cell(
        "cpu_long_variants.fashion_mnist.mocoring+keybn64+epochlr.s1"
    )
    assert cell.method == "mocoring+keybn64+epochlr" and cell.seed == 1
    assert config.seed == 1 and config.total_steps == 3000
    assert workdir == os.path.join(
        campaign_cells.WORK_ROOT, "cpu_long_variants", "fashion_mnist.mocoring+keybn64+epochlr.s1"
    )
    for name in (
        "official_cpu_long.fashion_mnist.mocoring.s0",
        "cpu_long.fashion_mnist.raw_pixels",
        "cpu_long.fashion_mnist.random_init.s0",
        "no_grid.fashion_mnist.mocoring.s0",
    ):
        with pytest.raises(SystemExit, match="not a training cell of ours"):
            campaign_cells.trained_cell(name)


# ---- mmselfsup's InterCLR (fake_official/mmselfsup: its model, memory, hooks, utils) -----------


def _fake_faiss(monkeypatch) -> list:
    """A `faiss` of the CPU classes only (no GPU index): k-means whose objective is kept per
    iteration in `iteration_stats` (faiss ≥ 1.7, no `obj`); returns the dims of the flat L2
    indexes made."""
    import types

    made = []

    class Stats:
        def __init__(self):
            self.items = []

        def size(self):
            return len(self.items)

        def at(self, i):
            return types.SimpleNamespace(obj=self.items[i])

    class Clustering:
        def __init__(self, d, k):
            self.d, self.k, self.iteration_stats = d, k, Stats()

        def train(self, x, index):
            c = x[np.random.default_rng(self.seed).choice(len(x), self.k, replace=False)]
            for _ in range(self.niter):
                dist = ((x[:, None] - c[None]) ** 2).sum(-1)
                label = dist.argmin(1)
                self.iteration_stats.items.append(float(dist.min(1).sum()))
                c = np.stack(
                    [x[label == j].mean(0) if (label == j).any() else c[j] for j in range(self.k)]
                )
            index.add(c)

    class IndexFlatL2:
        def __init__(self, d):
            made.append(d)

        def add(self, x):
            self.x = x

        def search(self, q, k):
            dist = ((q[:, None] - self.x[None]) ** 2).sum(-1)
            i = np.argsort(dist, 1)[:, :k]
            return np.take_along_axis(dist, i, 1), i

    def vector_to_array(vector):
        raise AssertionError("faiss 1.6's obj is a faiss vector; here it is read as an array")

    faiss = types.ModuleType("faiss")
    faiss.Clustering, faiss.IndexFlatL2, faiss.vector_to_array = (
        Clustering,
        IndexFlatL2,
        vector_to_array,
    )
    monkeypatch.setitem(sys.modules, "faiss", faiss)
    return made


def _interclr_numbers(fashion_dir: str, online: bool) -> dict:
    return _numbers(
        fashion_dir,
        method="interclr" if online else "interclr+offline",
        steps=5,  # 32 images, batch 8: 4 steps an epoch, the second epoch cut at one
        bank_momentum=1.0,
        num_clusters=2,
        min_cluster=2,
        online_labels=online,
        num_negatives=4,
        sampler="semihard",
        pool_size=8,
        margin=-0.5,
        intra_weight=0.75,
        inter_weight=0.25,
        centroid_every_steps=2,
        interval=1,
    )


@pytest.mark.parametrize("online", [True, False])
def test_the_interclr_shims_run_mmselfsups_model_memory_and_hooks(tmp_path, monkeypatch, online):
    """The fake's package `__init__`s raise if run; mmcv is not installed: the harness imports the
    files alone, with mmcv's stand-ins, in a gloo group of one; the runner calls the hooks in
    mmcv's order (k-means before the run, offline again after each `interval` epochs; online the
    centroids every 2 steps and the small clusters every step), the lr per epoch (cosine)."""
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    from experiments.official import train_interclr

    fashion = make_fashion_dir(str(tmp_path / "fashion"), num_train=40, num_test=10)
    Encoder = _tiny_encoder(torch, monkeypatch)
    made = _fake_faiss(monkeypatch)
    cuda, module_cuda = torch.Tensor.cuda, torch.nn.Module.cuda
    numbers = _interclr_numbers(fashion, online)
    model, curve, extra = train_interclr.train_interclr(
        FAKE_MMSELFSUP, numbers, base_encoder=Encoder
    )
    hook = sys.modules["mmselfsup.core.hooks.interclr_hook"].INSTANCES[-1]
    optimizer_hook = sys.modules["mmselfsup.core.hooks.optimizer_hook"].INSTANCES[-1]
    calls = model.memory_bank.calls
    assert optimizer_hook.steps == 5 and int(model.queue_ptr) == (5 * 8) % 16
    # mmcv's CosineAnnealing by epoch over the 2 epochs: lr0, then lr0·(cos(π/2) + 1)/2
    assert [epoch for epoch, _ in hook.weights] == [0, 1]
    assert [lr for _, lr in hook.weights] == pytest.approx([0.06, 0.03])
    if online:  # every_n_iters: (iter + 1) % n == 0
        assert hook.clustered_at == [0] and made == [4]
        assert (calls["samples"], calls["centroids"], calls["small"]) == (5, 2, 5)
        assert (calls["simple"], calls["assign"]) == (0, 0)
    else:  # before the run, then after epoch 0 and the cut epoch 1 (interval 1)
        assert hook.clustered_at == [0, 0, 1] and made == [4, 4, 4]
        assert (calls["simple"], calls["assign"]) == (5, 2)
        assert (calls["samples"], calls["centroids"], calls["small"]) == (0, 0, 0)
    q = dict(model.encoder_q.named_parameters())
    k = dict(model.encoder_k.named_parameters())
    assert not torch.equal(q["0.net.conv.weight"], k["0.net.conv.weight"])  # EMA, not a copy
    assert curve == [] and extra["encoder"] is model.encoder_q[0].net
    assert sum(extra["cluster_sizes"]) <= 32 and min(extra["cluster_sizes"]) >= 0
    # the shims are undone: no CUDA, no process group, no mmcv stand-ins left
    assert torch.Tensor.cuda is cuda and torch.nn.Module.cuda is module_cuda
    assert not dist.is_initialized() and "mmcv" not in sys.modules
    x, y = common.features(extra["encoder"], numbers, "test")
    assert x.shape == (10, 8) and y.shape == (10,)


def test_official_interclr_without_faiss_is_one_error(tmp_path, monkeypatch):
    from experiments.official import train_interclr

    monkeypatch.setitem(sys.modules, "faiss", None)
    with pytest.raises(SystemExit, match="^error: official interclr clusters with faiss"):
        train_interclr.train_interclr(FAKE_MMSELFSUP, _interclr_numbers(str(tmp_path), True))


def test_the_interclr_cells_hand_the_harness_our_numbers_or_refuse():
    grid = grids.OFFICIAL_CPU_LONG
    for method, online in (("interclr", True), ("interclr+offline", False)):
        cell = next(c for c in grids.cells(grid) if c.method == method)
        config = campaign_cells.cell_config(grid, cell)[0]
        numbers = runner.numbers(config, method)
        # :subset=10000: 80 clusters, 128 negatives from a pool of 1,024, the hook's interval 10
        assert (numbers["num_clusters"], numbers["num_negatives"], numbers["pool_size"]) == (
            80,
            128,
            1024,
        )
        assert (numbers["online_labels"], numbers["interval"], numbers["margin"]) == (
            online,
            10,
            -0.5,
        )
        assert numbers["train_subset"] == config.method_config.bank_size == 10_000
        with pytest.raises(SystemExit, match="labels"):
            runner.numbers(config, "interclr+offline" if online else "interclr")
    config.method_config.inter_temperature = 0.1
    with pytest.raises(SystemExit, match="one head τ"):
        runner.numbers(config, method)


# ---- CMC (fake_official/cmc: train_CMC.py's loader, model, banks, criteria, train) --------------


def _colour_images(path, num_train: int, num_test: int) -> str:
    """An .npz as `runner.write_images` writes it: random RGB images and labels."""
    rng = np.random.default_rng(0)
    np.savez(
        path,
        train_x=rng.integers(0, 256, (num_train, 16, 16, 3), dtype=np.uint8),
        train_y=rng.integers(0, 10, num_train),
        test_x=rng.integers(0, 256, (num_test, 16, 16, 3), dtype=np.uint8),
        test_y=rng.integers(0, 10, num_test),
    )
    return str(path)


def _cmc_numbers(images_file: str, **over) -> dict:
    cmc = dict(
        method="cmc",
        dataset="color_fashion_mnist",
        images_file=images_file,
        size=16,
        channels=3,
        hidden=0,
        train_subset=40,
        num_negatives=6,
        bank_momentum=0.5,
        cmc_loss="nce",
        crop_low=0.2,
        decay_epochs=[1, 2],
        decay_factor=0.1,
        steps=12,
    )
    return _numbers("", **{**cmc, **over})


def _view_encoder(torch):
    """A tiny `base_encoder(in_channel, low_dim)` with an `fc`, as the CMC shim builds a view's."""

    class Encoder(torch.nn.Module):
        def __init__(self, in_channel, low_dim):
            super().__init__()
            self.conv = torch.nn.Conv2d(in_channel, 8, 3, 2, 1)
            self.fc = torch.nn.Linear(8, low_dim)

        def forward(self, x):
            return self.fc(self.conv(x).relu().amax((2, 3)))

    return Encoder


@pytest.mark.parametrize("loss", ["nce", "softmax"])
def test_the_cmc_shims_run_train_cmc_with_its_one_edit(tmp_path, monkeypatch, loss):
    """`train_CMC.py` (whose `async=True` does not compile under Python 3) runs with the one edit:
    its loader at our size, its model with our view encoders, its banks and criteria, and its
    per-epoch step decay (epochs from 1, the last cut at the step count); the curve is of
    loss_l + loss_ab; the shims are undone; `embed` gives both views' pooled features."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    pytest.importorskip("skimage")
    from experiments.official import train_cmc

    images = _colour_images(tmp_path / "images.npz", 48, 6)
    monkeypatch.setattr(common, "LOG_EVERY", 4)
    numbers = _cmc_numbers(images, cmc_loss=loss)
    cuda, sync = torch.Tensor.cuda, torch.cuda.synchronize
    model, curve, extra = train_cmc.train_cmc(FAKE_CMC, numbers, _view_encoder(torch))
    script = sys.modules["train_CMC"]
    # 40 images in batches of 8 (the loader keeps its last batch): 5 a step, 3 epochs, 12 steps
    assert (
        script.LRS
        == [(1, 0.06)] * 5 + [(2, pytest.approx(0.006))] * 5 + [(3, pytest.approx(0.0006))] * 2
    )
    assert [step for step, _ in curve] == [4, 8, 12] and all(np.isfinite(v) for _, v in curve)
    assert torch.Tensor.cuda is cuda and torch.cuda.synchronize is sync
    with pytest.raises(RuntimeError, match="never built"):
        sys.modules["models.resnet"].resnet18()
    assert script.transforms.RandomResizedCrop.__name__ == "RandomResizedCrop"
    features = extra["embed"](np.load(images)["test_x"])
    assert features.shape == (6, 16) and extra["encoder"] is None
    assert (
        isinstance(script.NCEAverage, type)
        and model.encoder.module.l_to_ab.trunk.conv.in_channels == 1
    )


def test_a_train_cmc_without_its_async_line_is_one_error(tmp_path):
    from experiments.official import train_cmc

    (tmp_path / "train_CMC.py").write_text("print('another commit')\n")
    with pytest.raises(SystemExit, match="has not the one `index.cuda"):
        train_cmc.load_train_cmc(str(tmp_path))


def test_the_colour_cells_hand_the_harness_our_numbers_or_refuse():
    """The CMC cell of `official_cpu_long_color` gives the harness our bank, loss, crop and step
    schedule on color_fashion_mnist as generated; settings with no official form are refused."""
    grid = grids.OFFICIAL_CPU_LONG_COLOR
    cell = next(c for c in grids.cells(grid) if c.method == "cmc")
    config = campaign_cells.cell_config(grid, cell)[0]
    numbers = runner.numbers(config, "cmc")
    assert (numbers["dataset"], numbers["size"], numbers["steps"], numbers["batch"]) == (
        "color_fashion_mnist",
        32,
        3000,
        64,
    )
    assert (numbers["num_negatives"], numbers["bank_momentum"], numbers["cmc_loss"]) == (
        4096,
        0.5,
        "nce",
    )
    assert (numbers["crop_low"], numbers["decay_epochs"], numbers["hidden"]) == (
        0.2,
        [10, 13, 17],
        0,
    )
    ours = grids.GRIDS["cpu_long_color"]
    assert (
        campaign_cells.cell_config(ours, cell)[2] == campaign_cells.cell_config(grid, cell)[2]
    )  # one recipe
    for key, value, match in (
        ("optim.schedule", "cosine", "steps its lr down per epoch"),
        ("method_config.bank_size", 60_000, "the bank has 60000 rows"),
        ("data.color_fashion_mnist.views", "item", "not item views"),
    ):
        changed = campaign_cells.cell_config(grid, cell)[0]
        parent, _, leaf = key.rpartition(".")
        node = changed
        for part in parent.split("."):
            node = node[part]
        node[leaf] = value
        with pytest.raises(SystemExit, match=match):
            runner.numbers(changed, "cmc")


def test_the_colour_images_reach_the_harness_as_our_source_gives_them(tmp_path, monkeypatch):
    """`runner.write_images` writes our data set's splits, `common.read_split` reads them back
    (RGB) and `common.features` scores 3-channel images or a trainer's `embed`."""
    torch = pytest.importorskip("torch")
    from ssl_jax.data import datasets

    rng = np.random.default_rng(1)
    splits = {
        split: (rng.integers(0, 256, (n, 8, 8, 3), dtype=np.uint8), rng.integers(0, 10, n))
        for split, n in (("train", 12), ("test", 4))
    }
    monkeypatch.setattr(datasets, "load_arrays", lambda data, split: splits[split])
    path = str(tmp_path / "images.npz")
    runner.write_images(types.SimpleNamespace(data=None), path)
    numbers = dict(images_file=path, train_subset=5, mean=[0.5] * 3, std=[0.25] * 3)
    images, labels = common.read_subset(numbers)
    np.testing.assert_array_equal(images, splits["train"][0][:5])
    np.testing.assert_array_equal(labels, splits["train"][1][:5])
    encoder = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(192, 3))
    encoder.fc = torch.nn.Identity()
    x, y = common.features(encoder, numbers, "test")
    expected = encoder(
        (torch.from_numpy(splits["test"][0]).float().div(255).permute(0, 3, 1, 2) - 0.5) / 0.25
    )
    np.testing.assert_allclose(x, expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    x, _ = common.features(None, numbers, "test", embed=lambda b: b.reshape(len(b), -1)[:, :2])
    assert x.shape == (4, 2) and x.dtype == np.float32
