"""One probe vocabulary: `Encoder.features(x, stages=True)` is the probe table's stage feature, the
probe and kNN jobs take `features='pooled' | 'stages'`, name it in their lines and results, and
print progress lines for their long phases."""

import json
import os
import re

import numpy as np
import pytest

from configs import knn as knn_config
from configs import linear_probe as probe_config
from ssl_jax import checkpoint, configs, train
from ssl_jax.evaluate import knn, linear_probe
from ssl_jax.evaluate.encoder import load_encoder, split_features
from ssl_jax.evaluate.run_features import features_fn

STAGES = "features: stages (every stage's pool, 120-d)"  # ResNet-18 at width 1/8: 8+16+32+64


def _probe_config(workdir, preset="fast", features="stages"):
    c = probe_config.get_config(f"{preset},runlocal")
    c.init = workdir
    c.probe.num_train = 96
    c.probe.num_test = 40
    c.probe.eval_batch_size = 16
    c.probe.batch_size = 32
    c.probe.features = features
    return c


def _host_top1(workdir, head, num_test):
    """top-1 of a saved head on the stage features `load_encoder` gives (gathered on the host)."""
    x, y = load_encoder(workdir).split_features("test", batch_size=16, limit=num_test, stages=True)
    return float((np.argmax(x @ head["kernel"] + head["bias"], axis=1) == y).mean())


def test_encoder_stage_features_are_the_probe_tables(pretrained_workdir):
    enc = load_encoder(pretrained_workdir)
    assert (enc.feature_dim, enc.stage_feature_dim) == (64, 120)
    assert (enc.feature_dim_of(False), enc.feature_dim_of(True)) == (64, 120)
    config = checkpoint.read_config(pretrained_workdir)
    exp = train.build_experiment(config)
    state = train.init_or_restore(exp, checkpoint.Checkpointer(pretrained_workdir))
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    table_fn = features_fn(exp, stages=True)  # the probe table's `stage_feature_fn`
    pixels = np.random.default_rng(0).integers(0, 256, (8, 16, 16, 1), dtype=np.uint8)
    expected = np.asarray(table_fn(variables, pixels))
    f = np.asarray(enc.features(enc.normalize(pixels), stages=True))
    assert f.shape == (8, 120)
    np.testing.assert_allclose(f, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f[:, -64:], np.asarray(enc.features(enc.normalize(pixels))))
    # over a split: the Encoder's extraction and the probe table's give the same rows
    ours, y = enc.split_features("train", batch_size=16, limit=40, stages=True)
    table, y_table = split_features(
        table_fn, variables, config, "train", mesh=exp.mesh, batch_size=16, limit=40
    )
    np.testing.assert_allclose(ours, table, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(y, y_table)


def test_probe_job_on_stage_features_names_them(pretrained_workdir, tmp_path, capsys):
    out = str(tmp_path / "fast")
    record = linear_probe.run(_probe_config(pretrained_workdir), out)
    assert (record["features"], record["feature_dim"]) == ("stages", 120)
    with open(os.path.join(out, linear_probe.RESULT_FILE)) as f:
        saved = json.load(f)
    assert (saved["features"], saved["feature_dim"]) == ("stages", 120)
    head = linear_probe.load_head(out)
    assert head["kernel"].shape == (120, 10)
    assert record["top1"] == pytest.approx(_host_top1(pretrained_workdir, head, 40))
    lines = capsys.readouterr().out.splitlines()
    assert "features: stages" in lines[0]  # the loading line, before the dimension is known
    header = next(line for line in lines if line.startswith("linear probe (fast, cached)"))
    assert header.endswith(STAGES) and STAGES in lines[-1]
    assert lines[-1].startswith("probe/top1")
    # progress lines: each phase's start line, then its end line with the duration
    for what in (
        r"loading the encoder from .* \(linear_probe, features: stages\)",
        r"embedding fashion_mnist train \(96 images, stages features\)",
        r"embedding fashion_mnist test \(40 images, stages features\)",
        r"probe fit \(lbfgs\): l2 grid of 5 on 87 train rows, scored on 9 held out",
        r"probe fit \(lbfgs\): l2 \S+ on all 96 train rows",
    ):
        start = [i for i, line in enumerate(lines) if re.fullmatch(what + r" \.\.\.", line)]
        end = [i for i, line in enumerate(lines) if re.fullmatch(what + r": \d+\.\d s", line)]
        assert len(start) == 1 and len(end) == 1 and start[0] < end[0], (what, lines)


def test_sgd_on_images_probes_stage_features(pretrained_workdir, tmp_path, capsys):
    """The MoCo protocol (augmented images, a frozen forward per step) on the stage features."""
    config = _probe_config(pretrained_workdir, "moco")
    config.probe.num_epochs = 1.0
    out = str(tmp_path / "moco")
    record = linear_probe.run(config, out)
    head = linear_probe.load_head(out)
    assert head["kernel"].shape == (120, 10) and record["input"] == "images"
    assert record["top1"] == pytest.approx(_host_top1(pretrained_workdir, head, 40))
    printed = capsys.readouterr().out
    assert "embedding fashion_mnist test (40 images, stages features): " in printed
    assert STAGES in printed.splitlines()[-1]


def test_knn_job_on_stage_features(pretrained_workdir, tmp_path, capsys):
    config = knn_config.get_config("runlocal")
    assert config.knn.features == "pooled"
    config.init = pretrained_workdir
    config.knn.update(num_train=64, num_test=24, batch_size=16, ks=(5,), features="stages")
    record = knn.run(config, str(tmp_path / "knn"))
    assert (record["features"], record["feature_dim"]) == ("stages", 120)
    printed = capsys.readouterr().out
    assert STAGES in printed
    for what in (
        "embedding fashion_mnist train (64 images, stages features)",
        "weighted kNN (k 5)",
    ):
        assert f"{what} ...\n" in printed and re.search(re.escape(what) + r": \d+\.\d s", printed)


@pytest.mark.parametrize("job", ["linear_probe", "knn"])
def test_unknown_features_is_a_config_error_before_loading(job, tmp_path, capsys):
    if job == "knn":
        config, block, run = knn_config.get_config(), "knn", knn.run
        config.knn.features = "layer3"
    else:
        config, block, run = _probe_config("", features="layer3"), "probe", linear_probe.run
    config.init = str(tmp_path / "no_run_needed")  # refused before the run is even looked at
    message = (
        rf"config.{block}.features='layer3' is not allowed; allowed values: \['pooled', 'stages'\]"
    )
    with pytest.raises(configs.ConfigError, match=message):
        run(config, str(tmp_path / "out"))
    assert capsys.readouterr().out == "" and not (tmp_path / "out").exists()
