"""load_encoder: path forms, online/target weights, features against the training model, errors."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from ssl_jax import checkpoint, train
from ssl_jax.evaluate.encoder import load_encoder, num_eval_batches
from tests.helpers import tiny_config


def test_path_forms_weights_and_features(pretrained_workdir):
    enc = load_encoder(pretrained_workdir)
    assert enc.step == 2 and enc.weights == "online"
    assert enc.checkpoint == os.path.join(pretrained_workdir, "checkpoints", "2")
    x = np.random.default_rng(0).normal(size=(5, 16, 16, 1)).astype(np.float32)
    f = np.asarray(enc.features(x))
    assert f.shape == (5, enc.feature_dim) == (5, 64)

    # the same features as the training code's model on the restored state
    config = checkpoint.read_config(pretrained_workdir)
    exp = train.build_experiment(config)
    state = train.init_or_restore(exp, checkpoint.Checkpointer(pretrained_workdir))
    ref = exp.ctx.model.apply(
        {"params": state.params, "batch_stats": state.batch_stats}, x, train=False
    )["features"]
    np.testing.assert_allclose(f, np.asarray(ref), rtol=1e-5, atol=1e-6)

    # checkpoints/ folder and checkpoints/<step> folder give the same encoder
    for path in ("checkpoints", "checkpoints/2", "checkpoints/2/default"):
        other = load_encoder(os.path.join(pretrained_workdir, path))
        np.testing.assert_array_equal(np.asarray(other.features(x)), f)
    # a workdir may carry the name of orbax's item folder ('default') or a number, in a folder
    # named like a step
    folder = os.path.join(os.path.dirname(pretrained_workdir), "2024")
    os.makedirs(folder, exist_ok=True)
    for name in ("default", "900"):
        link = os.path.join(folder, name)
        if not os.path.exists(link):
            os.symlink(pretrained_workdir, link)
        assert checkpoint.locate(link)[:2] == (link, os.path.join(link, "checkpoints", "2"))
        np.testing.assert_array_equal(np.asarray(load_encoder(link).features(x)), f)

    target = load_encoder(pretrained_workdir, weights="target")
    ref_t = exp.ctx.model.apply(
        {"params": state.target_params, "batch_stats": state.target_batch_stats}, x, train=False
    )["features"]
    np.testing.assert_allclose(
        np.asarray(target.features(x)), np.asarray(ref_t), rtol=1e-5, atol=1e-6
    )
    assert not np.allclose(np.asarray(target.features(x)), f)

    # uint8 pixels through the run's normalisation
    pixels = np.random.default_rng(1).integers(0, 256, (3, 16, 16, 1), dtype=np.uint8)
    expected = (pixels / 255.0 - config.data.mean[0]) / config.data.std[0]
    np.testing.assert_allclose(np.asarray(enc.normalize(pixels)), expected, rtol=1e-5, atol=1e-5)


def test_no_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(checkpoint.CheckpointError, match="does not exist"):
        load_encoder(str(tmp_path / "nope"))
    with pytest.raises(checkpoint.CheckpointError, match="no checkpoint"):
        load_encoder(str(tmp_path))
    checkpoint.write_config(str(tmp_path), tiny_config())
    os.makedirs(tmp_path / "checkpoints" / "5.orbax-checkpoint-tmp")  # an unfinished save
    with pytest.raises(checkpoint.CheckpointError, match="no finished checkpoint"):
        load_encoder(str(tmp_path))


def test_other_architecture_is_refused(pretrained_workdir, tmp_path):
    # a ResNet-18 checkpoint under the config of a ResNet-34 run
    shutil.copytree(os.path.join(pretrained_workdir, "checkpoints"), tmp_path / "checkpoints")
    config = tiny_config()
    config.model.backbone = "resnet34"
    checkpoint.write_config(str(tmp_path), config)
    with pytest.raises(checkpoint.CheckpointError, match=r"resnet34.*layer1_2"):
        load_encoder(str(tmp_path))
    # or an override of the model that does not match the checkpoint
    with pytest.raises(checkpoint.CheckpointError, match="has shape"):
        load_encoder(pretrained_workdir, model_config={"width": 0.25})
    with pytest.raises(ValueError, match="weights"):
        load_encoder(pretrained_workdir, weights="ema")


def test_eval_batches_cover_every_process_slice():
    # 10 examples over 3 processes: slices of 3, 3, 4 -> 2 batches of 2 each
    assert num_eval_batches(10, 2, 3) == 2
    assert num_eval_batches(10, 2, 3, limit=3) == 2  # the first 3 all lie in process 0's slice
    assert num_eval_batches(10, 4, 1, limit=5) == 2


def test_import_ssl_jax_stays_light():
    code = "import sys, ssl_jax; assert 'jax' not in sys.modules, sorted(sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    )
    assert out.returncode == 0, out.stderr
    import ssl_jax

    assert ssl_jax.load_encoder is load_encoder
