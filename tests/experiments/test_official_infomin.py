"""PyContrast's InfoMin through the harness (`experiments/official/train_infomin.py`) against a fake
checkout (`fake_official/pycontrast`: the official entry points and their CUDA / torch.distributed
calls, not the official code): `main()` runs on one CPU process and the shims are undone after;
aug "D" and the jigsaw transform are the official classes at our sizes; the curve is of the loss
the optimiser steps on; our config's numbers, or one error line where the official code has none.
No test needs the network or a real checkout."""

from __future__ import annotations

import dataclasses
import math
import os
import sys

import numpy as np
import pytest

from experiments.official import checkouts, common
from tests.experiments.test_official import _numbers

FAKE_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_official")
FAKE = os.path.join(FAKE_ROOT, "pycontrast")
OPS = [
    {"op": "random_resized_crop", "size": 8, "scale": [0.2, 1.0]},
    {"op": "horizontal_flip", "p": 0.5},
    {"op": "color_jitter", "p": 0.8, "brightness": 0.8, "contrast": 0.8, "saturation": 0.8},
    {"op": "gaussian_blur", "p": 0.5, "sigma": [0.1, 2.0], "kernel_size": 23},
    {"op": "rand_augment", "num_ops": 2, "magnitude": 10.0, "magnitude_std": 0.5, "p": 0.5},
    {"op": "grayscale", "p": 0.2},
]
JIGSAW = dict(
    jigsaw=True, beta=0.25, jigsaw_size=9, jigsaw_scale=[0.6, 1.0], jigsaw_grid=3, jigsaw_patch=2
)


def _images(tmp_path) -> str:
    """An images file as `runner.write_images` writes it: 40 train, 10 test RGB 8-px images."""
    rng = np.random.default_rng(0)
    path = str(tmp_path / "images.npz")
    np.savez(
        path,
        train_x=rng.integers(0, 256, (40, 8, 8, 3), dtype=np.uint8),
        train_y=rng.integers(0, 10, 40),
        test_x=rng.integers(0, 256, (10, 8, 8, 3), dtype=np.uint8),
        test_y=rng.integers(0, 10, 10),
    )
    return path


def _infomin_numbers(tmp_path, **over) -> dict:
    numbers = _numbers(
        "",
        method="infomin",
        images_file=_images(tmp_path),
        size=8,
        channels=3,
        mean=[0.5, 0.4, 0.3],
        std=[0.3, 0.3, 0.3],
        ops=OPS,
        temperature=0.15,
        **JIGSAW,
    )
    return {**numbers, **over}


def _encoder(torch):
    """A tiny `base_encoder(num_classes)` of 3 channels with an `fc`, 8 features."""

    class Encoder(torch.nn.Module):
        def __init__(self, num_classes):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, 2, 1)
            self.bn = torch.nn.BatchNorm2d(8)
            self.fc = torch.nn.Linear(8, num_classes)

        def forward(self, x):
            return self.fc(self.bn(self.conv(x)).relu().amax((2, 3)))

    return Encoder


def _fresh(monkeypatch):
    tops = ("main_contrast", "options", "learning", "networks", "memory", "datasets")
    for name in [n for n in sys.modules if n.split(".")[0] in tops]:
        monkeypatch.delitem(sys.modules, name)


def _pinned_fake(monkeypatch) -> str:
    """The fake checkout behind `checkouts.check`: the pins are the fake files' hashes (each pinned
    path the fake has; every module the harness imports among them)."""
    from experiments.official import train_infomin

    real = checkouts.CHECKOUTS["pycontrast"]
    files = tuple(
        (path, checkouts.sha256(os.path.join(FAKE, path)))
        for path, _ in real.files
        if os.path.exists(os.path.join(FAKE, path))
    )
    imported = {f"pycontrast/{m.replace('.', '/')}.py" for m in train_infomin.MODULES}
    assert imported <= {path for path, _ in files}
    pins = {**checkouts.CHECKOUTS, "pycontrast": dataclasses.replace(real, files=files)}
    monkeypatch.setattr(checkouts, "CHECKOUTS", pins)
    return checkouts.check("pycontrast", FAKE_ROOT)


def test_the_pycontrast_shims_run_main_on_one_cpu_process_and_are_undone(tmp_path, monkeypatch):
    """`main()` → `main_worker(0, 1, args)` as the official entry point calls it: the preset's
    command line, the DDP environment in a gloo group of one, each step keys → queries → SGD step
    → EMA, the queue, the per-epoch cosine from epoch 1, the last epoch cut; after the run no
    `.cuda` identity, process group, tensorboard stand-in, argv or environment change is left."""
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    from experiments.official import train_infomin

    _fresh(monkeypatch)
    monkeypatch.setattr(common, "LOG_EVERY", 2)
    path = _pinned_fake(monkeypatch)
    saved = (torch.Tensor.cuda, torch.nn.Module.cuda, torch.backends.cudnn.benchmark, sys.argv)
    environ = os.environ.get("PYTHONWARNINGS")
    numbers = _infomin_numbers(tmp_path, train_subset=32, steps=6)
    model, curve, extra = train_infomin.train_infomin(path, numbers, base_encoder=_encoder(torch))
    trainer = sys.modules["learning.contrast_trainer"].INSTANCES[-1]
    (args,) = sys.modules["options.train_options"].PARSED[-1:]
    assert (args.method, args.nce_t, args.jigsaw, args.aug, args.head) == (
        "InfoMin",
        0.15,
        True,
        "D",
        "mlp",
    )
    assert (args.batch_size, args.nce_k, args.alpha, args.beta, args.cosine) == (
        8,
        16,
        0.9,
        0.25,
        True,
    )
    assert (args.gpu, args.world_size, args.dist_backend) == (0, 1, "gloo")
    # 32 images, batch 8: 4 steps an epoch, 6 steps = 2 epochs, the second cut at 2
    assert trainer.events == ["keys", "query", "step", "ema"] * 6
    assert trainer.jigsaw_shapes == [(8, 9, 3, 2, 2)] * 6 and trainer.saved == [1, 2]
    low = 0.06 * 0.1**3  # the cosine per epoch e = 1, 2 of 2, to lr·0.1³
    expected = [low + (0.06 - low) * (1 + math.cos(math.pi * e / 2)) / 2 for e in (1, 2)]
    assert trainer.lrs == pytest.approx(expected)
    assert extra["lr_per_epoch"] == pytest.approx(expected, abs=1e-6)
    # the official widths from our feature dim (`_parse_width`): head 8 → 8 → out_dim 4
    assert model.head[0].in_features == model.head[0].out_features == 8
    assert model.head[2].out_features == 4 and type(model).__name__ == "RGBMultiHeads"
    assert extra["encoder"] is model.encoder and isinstance(model.encoder.fc, torch.nn.Identity)
    assert [step for step, _ in curve] == [2, 4, 6]
    # the shims are undone
    assert (torch.Tensor.cuda, torch.nn.Module.cuda, torch.backends.cudnn.benchmark) == saved[:3]
    assert sys.argv is saved[3] and os.environ.get("PYTHONWARNINGS") == environ
    assert not dist.is_initialized() and "tensorboard_logger" not in sys.modules
    if not torch.cuda.is_available():
        with pytest.raises((AssertionError, RuntimeError)):
            torch.zeros(1).cuda()
    x, y = common.features(extra["encoder"], numbers, "test")
    assert x.shape == (10, 8) and y.shape == (10,)


def test_the_infomin_curve_is_of_the_loss_the_optimiser_steps_on(tmp_path, monkeypatch):
    """The curve's value at step s is (1 − β)·CE + β·CE_jig as the trainer stepped on it; without
    the jigsaw branch (`Customize`, our τ) it is the CE alone."""
    torch = pytest.importorskip("torch")
    from experiments.official import train_infomin

    _fresh(monkeypatch)
    monkeypatch.setattr(common, "LOG_EVERY", 1)
    numbers = _infomin_numbers(tmp_path, train_subset=32, steps=5)
    _, curve, _ = train_infomin.train_infomin(FAKE, numbers, base_encoder=_encoder(torch))
    stepped = sys.modules["learning.contrast_trainer"].INSTANCES[-1].stepped
    assert [s for s, _ in curve] == [1, 2, 3, 4, 5]
    assert [v for _, v in curve] == pytest.approx(stepped, abs=1e-4)

    _fresh(monkeypatch)
    numbers = _infomin_numbers(tmp_path, train_subset=32, steps=3, jigsaw=False, temperature=0.2)
    _, curve, _ = train_infomin.train_infomin(FAKE, numbers, base_encoder=_encoder(torch))
    trainer = sys.modules["learning.contrast_trainer"].INSTANCES[-1]
    args = sys.modules["options.train_options"].PARSED[-1]
    assert (args.method, args.nce_t, args.jigsaw, args.mem) == ("Customize", 0.2, False, "moco")
    assert trainer.jigsaw_shapes == [] and len(trainer.stepped) == 3
    assert [v for _, v in curve] == pytest.approx(trainer.stepped, abs=1e-4)
    with pytest.raises(SystemExit, match="^error: official infomin: the 'mlp' head's hidden"):
        train_infomin.train_infomin(FAKE, {**numbers, "hidden": 16})


def test_aug_d_and_the_jigsaw_transform_are_the_official_classes_at_our_sizes(monkeypatch):
    """Our recipe's numbers in aug D's classes in their order (util.py:286-300), the blur's 23
    taps as `GaussianBlur(22)`, RandAugment's config string and fill; the jigsaw transform's RRC,
    flip, `JigsawCrop(3, 9, 2)` and the per-patch normalisation."""
    pytest.importorskip("torch")
    from experiments.official import train_infomin

    _fresh(monkeypatch)
    util, rand_augment = common.import_official(
        FAKE + "/pycontrast", "datasets.util", "datasets.RandAugment"
    )
    numbers = dict(size=8, ops=OPS, mean=[0.5, 0.4, 0.3], std=[0.3, 0.3, 0.3], **JIGSAW)
    steps = train_infomin.view_transform(util, rand_augment, numbers).args[0]
    names = [type(s).__name__ for s in steps]
    assert names[:2] == ["RandomResizedCrop", "_Recorded"] and names[-3:] == [
        "RGB2RGB",
        "ToTensor",
        "Normalize",
    ]
    assert steps[0].args == (8,) and steps[0].kwargs == {"scale": (0.2, 1.0)}
    assert steps[1].kwargs == {"p": 0.5}
    assert steps[2].args[0][0].args == (0.8, 0.8, 0.8, 0) and steps[2].kwargs == {"p": 0.8}
    assert steps[3].args[0][0].args == (22,) and steps[3].kwargs == {"p": 0.5}
    ra = steps[4]
    assert ra.config_str == "rand-n2-m10-mstd0.5" and not ra.use_cmc
    assert ra.hparams == {"translate_const": 3, "img_mean": (124, 116, 104)}
    assert steps[5].kwargs == {"p": 0.2} and steps[-1].kwargs["mean"] == [0.5, 0.4, 0.3]
    rrc, flip, crop, stack = train_infomin.jigsaw_transform(util, numbers).args[0]
    assert rrc.args == (9,) and rrc.kwargs == {"scale": (0.6, 1.0)}
    assert crop.kwargs == {"n_grid": 3, "img_size": 9, "crop_size": 2}
    assert type(stack).__name__ == "StackTransform"


def _config(jigsaw: bool = True):
    from configs import infomin_color_fashion_mnist

    config = infomin_color_fashion_mnist.get_config(None if jigsaw else "jigsaw=False")
    config.model.projector.hidden_dims = (256,)  # the official 'mlp' head: as wide as the feature
    # --cosine: per epoch from 1 to lr·0.1³ (the official grid's settings)
    config.optim.update(
        schedule_unit="epoch", epoch_offset=1.0, final_lr=config.optim.base_lr / 1000
    )
    config.method_config.update(key_bn_group_size=0, shuffle_bn=False)  # one process: one key BN
    return config


def test_infomin_numbers_are_our_configs_or_one_error_line():
    pytest.importorskip("jax")
    from experiments import campaign_cells, grids
    from experiments.official import runner, train_infomin

    grid = grids.OFFICIAL_CPU_LONG_COLOR  # the cell's config passes, ours the same recipe
    cell = next(c for c in grids.cells(grid) if c.method == "infomin")
    numbers = runner.numbers(campaign_cells.cell_config(grid, cell)[0], "infomin")
    assert (numbers["hidden"], numbers["temperature"], numbers["queue"], numbers["jigsaw"]) == (
        256,
        0.15,
        4096,
        True,
    )
    ours = grids.GRIDS["cpu_long_color"]
    assert campaign_cells.cell_config(ours, cell)[2] == campaign_cells.cell_config(grid, cell)[2]

    numbers = train_infomin.infomin_numbers(_config(), "infomin")
    assert numbers == dict(
        jigsaw=True,
        beta=0.5,
        jigsaw_size=36,
        jigsaw_scale=[0.6, 1.0],
        jigsaw_grid=3,
        jigsaw_patch=9,
    )
    assert train_infomin.infomin_numbers(_config(jigsaw=False), "infomin") == dict(
        jigsaw=False, beta=0.5
    )
    changes = {
        "the 'mlp' head": lambda c: c.model.projector.update(hidden_dims=(512,)),
        "the whole batch": lambda c: c.method_config.update(key_bn_group_size=32),
        "GaussianBlur draws": lambda c: c.data.recipes.update(
            infomin=tuple(
                {**op, "sigma": (0.1, 1.0)} if op["op"] == "gaussian_blur" else op
                for op in c.data.recipes.infomin
            )
        ),
        "α is constant": lambda c: c.ema.update(schedule="cosine"),
        "warm-up": lambda c: setattr(c, "global_batch_size", 512),
        "--cosine": lambda c: c.optim.update(schedule="step"),
        "once per epoch": lambda c: c.optim.update(schedule_unit="step"),
        "lr·0.1³": lambda c: c.optim.update(final_lr=0.0),
    }
    for words, change in changes.items():
        config = _config()
        change(config)
        with pytest.raises(SystemExit) as error:
            train_infomin.infomin_numbers(config, "infomin")
        message = str(error.value)
        assert message.startswith("error: official infomin: ") and "\n" not in message
        assert words in message, message


def test_a_missing_or_other_commit_pycontrast_checkout_is_one_clear_error(tmp_path):
    checkout = checkouts.CHECKOUTS["pycontrast"]
    assert checkout.repo == "HobbitLong/PyContrast" and checkout.commit.startswith("84f94eab")
    with pytest.raises(SystemExit, match=r"no checkout of HobbitLong/PyContrast .* git clone"):
        checkouts.check("pycontrast", str(tmp_path))
    for path, _ in checkout.files:
        (tmp_path / "pycontrast" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "pycontrast" / path).write_text("# another commit\n")
    with pytest.raises(SystemExit, match="differs from HobbitLong/PyContrast at 84f94eab"):
        checkouts.check("pycontrast", str(tmp_path))
    rows = checkouts.SHIMS["pycontrast"]
    assert rows and all(len(row) == 3 and ":" in row[0] for row in rows)
