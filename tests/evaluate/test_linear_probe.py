"""The linear_probe job: presets, every test image counted once, saved head, bad input."""

import json
import os

import jax
import numpy as np
import pytest

from configs import linear_probe as probe_config
from ssl_jax import checkpoint, configs
from ssl_jax.evaluate import linear_probe, probe_fit
from ssl_jax.evaluate.encoder import load_encoder
from tests.helpers import tiny_config, write_png_folder


def _config(workdir, preset):
    c = probe_config.get_config(f"{preset},runlocal")
    c.init = workdir
    c.probe.num_train = 96
    c.probe.num_test = 100  # not a multiple of the 8 x 16 global eval batch
    c.probe.eval_batch_size = 16
    c.probe.batch_size = 32
    return c


def _host_accuracy(workdir, head, num_test):
    enc = load_encoder(workdir)
    x, y = enc.split_features("test", batch_size=16, limit=num_test)
    logits = x @ head["kernel"] + head["bias"]
    ranked = np.argsort(-logits, axis=1)
    return float((ranked[:, 0] == y).mean()), float((ranked[:, :5] == y[:, None]).any(1).mean())


def test_presets_follow_their_protocols():
    moco, sce, ring, fast = (probe_config.get_config(p) for p in ("moco", "sce", "ring", "fast"))
    assert (moco.probe.optim.base_lr, moco.probe.num_epochs, moco.probe.batch_size) == (
        30.0,
        100,
        256,
    )
    assert moco.probe.optim.decay_epochs == (60.0, 80.0) and moco.probe.optim.weight_decay == 0
    assert moco.probe.input == "images" and moco.probe.optim.schedule == "step"
    assert (sce.probe.num_epochs, sce.probe.batch_size, sce.probe.optim.schedule) == (
        90,
        1024,
        "cosine",
    )
    assert sce.probe.optim.lr_scaling == "linear" and sce.probe.optim.base_lr == 0.1
    assert (ring.probe.input, ring.probe.optim.base_lr, ring.probe.optim.schedule) == (
        "features",
        0.01,
        "constant",
    )
    assert fast.probe.protocol == "fast" and probe_config.get_config().probe.preset == "auto"
    with pytest.raises(configs.ConfigError, match="preset"):
        probe_config.get_config("moco,sce")


def test_ring_protocol_on_cached_features(pretrained_workdir, tmp_path):
    config = _config(pretrained_workdir, "ring")
    config.probe.optim.base_lr = 0.5
    out = str(tmp_path / "ring")
    record = linear_probe.run(config, out)
    assert record["num_test"] == 100 and record["steps"] == 2 * (96 // 32)
    head = linear_probe.load_head(out)
    assert head["kernel"].shape == (64, 10) and head["bias"].shape == (10,)
    top1, top5 = _host_accuracy(pretrained_workdir, head, 100)
    assert record["top1"] == pytest.approx(top1) and record["top5"] == pytest.approx(top5)
    logged = [json.loads(line) for line in open(os.path.join(out, "metrics.jsonl"))]
    assert logged[-1]["probe/top1"] == pytest.approx(top1)
    assert {"probe/train_loss", "probe/lr"} <= set(logged[0])
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(out))
    with open(os.path.join(out, "probe_result.json")) as f:
        assert json.load(f)["protocol"] == "sgd"


def test_moco_protocol_on_augmented_images(pretrained_workdir, tmp_path):
    config = _config(pretrained_workdir, "moco")
    config.probe.num_epochs = 1.0
    out = str(tmp_path / "moco")
    record = linear_probe.run(config, out)
    assert record["steps"] == 3 and record["input"] == "images"
    head = linear_probe.load_head(out)
    assert np.isfinite(head["kernel"]).all()
    assert record["top1"] == pytest.approx(_host_accuracy(pretrained_workdir, head, 100)[0])


@pytest.mark.parametrize("solver", ["ridge", "lbfgs"])
def test_fast_protocol_head_applies_to_raw_features(pretrained_workdir, tmp_path, solver):
    out = str(tmp_path / "fast")
    config = _config(pretrained_workdir, "fast")
    config.probe.solver = solver
    record = linear_probe.run(config, out)
    head = linear_probe.load_head(out)
    top1, top5 = _host_accuracy(pretrained_workdir, head, 100)
    assert record["top1"] == pytest.approx(top1) and record["top5"] == pytest.approx(top5)
    assert probe_config.get_config("fast").probe.l2_grid == ()  # the solver's own grid
    assert record["l2"] in probe_fit.L2_GRIDS[solver]


def test_bad_input_fails_before_writing(pretrained_workdir, tmp_path):
    out = tmp_path / "out"
    # a dataset without labels
    config = _config(pretrained_workdir, "fast")
    config.data.name = "image_folder"
    config.data.data_dir = write_png_folder(str(tmp_path / "flat"), classes=0, per_class=4)
    with pytest.raises(configs.ConfigError, match="needs labels.*eval_train_split"):
        linear_probe.run(config, str(out))
    # a workdir without a checkpoint
    empty = tmp_path / "empty"
    empty.mkdir()
    checkpoint.write_config(str(empty), tiny_config())
    config = _config(str(empty), "fast")
    with pytest.raises(checkpoint.CheckpointError, match="no checkpoint"):
        linear_probe.run(config, str(out))
    # no init at all
    config.init = ""
    with pytest.raises(configs.ConfigError, match="config.init"):
        linear_probe.run(config, str(out))
    assert not out.exists()


def test_labelled_image_folder_override(pretrained_workdir, tmp_path):
    """Dataset taken from the pretraining run unless overridden: here a 3-class image folder."""
    root = str(tmp_path / "folder")
    write_png_folder(os.path.join(root, "train"), classes=3, per_class=8)
    write_png_folder(os.path.join(root, "test"), classes=3, per_class=5, seed=1)
    config = _config(pretrained_workdir, "fast")
    config.data.name = "image_folder"
    config.data.data_dir = root
    config.data.eval_test_split = "test"
    config.probe.num_test = -1
    record = linear_probe.run(config, str(tmp_path / "out"))
    assert (
        record["num_classes"] == 3
        and record["num_test"] == 15
        and record["dataset"] == "image_folder"
    )
    assert jax.device_count() == 8


def test_a_diverging_probe_says_so_and_what_to_change():
    """Chance level of 10 classes is ln 10 = 2.30: MoCo's lr-30 preset on a small encoder gave
    losses of 575 -> 900 in silence; a loss far above chance (or not finite) is one warning line
    naming the lr, the preset and the way out."""
    from ssl_jax.evaluate import linear_probe

    assert linear_probe.divergence_warning(2.2, 10, 30.0, "moco") is None
    assert linear_probe.divergence_warning(6.8, 10, 30.0, "moco") is None  # 2.95 × chance
    line = linear_probe.divergence_warning(574.8, 10, 30.0, "moco")
    assert line.startswith("warning: the probe's loss 574.8 is above 3 × chance level")
    assert "lr 30" in line and "preset 'moco'" in line and "':fast'" in line
    assert "preset 'moco'" not in linear_probe.divergence_warning(float("nan"), 10, 0.1, "sce")


@pytest.mark.parametrize("data, preset", [("fashion_mnist", "fast"), ("imagenet2012", "moco")])
def test_the_default_preset_is_the_one_for_the_pretraining_data(data, preset):
    """No preset named: 'fast' for a run pretrained on a small data set (MoCo's lr-30 SGD protocol
    diverges on a small encoder there), MoCo's ImageNet protocol otherwise; said in one line."""
    config = probe_config.get_config()
    config.init = "runs/x"
    config.probe_small_data.num_train = 123  # the small-data block is the one that runs
    lines = []
    resolved = linear_probe.resolve_preset(config, data, num_devices=1, log=lines.append)
    assert resolved.probe.preset == preset and config.probe.preset == "auto"  # not in place
    expected = probe_config.get_config(preset).probe
    expected.preset = preset
    if preset == "fast":
        expected.num_train = 123
    assert resolved.probe.to_dict() == expected.to_dict()
    assert lines == [lines[0]] and f"preset: '{preset}' (the default for {data}" in lines[0]
    named = probe_config.get_config("sce")
    assert linear_probe.resolve_preset(named, data, num_devices=1, log=lines.append) is named
