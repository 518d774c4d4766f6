"""MODEL.WEIGHTS checks (no Detectron2 needed): what Detectron2 would load silently wrong, or fail
on deep in its build, is refused with one message that says what to set."""

import pickle
import types
import zipfile

import numpy as np
import pytest

from ssl_jax.detection import weights


def backbone(depth=18, in_channels=3, stem=64):
    """A Detectron2-named ResNet backbone dict of `depth` (shapes where the checks read them)."""
    bottleneck = depth not in (18, 34)
    model = {"stem.conv1.weight": np.zeros((stem, in_channels, 7, 7), np.float32)}
    out = 256 if bottleneck else 64
    for s, n in zip((2, 3, 4, 5), weights.BLOCKS[depth], strict=True):
        for i in range(n):
            convs = ("conv1", "conv2", "conv3") if bottleneck else ("conv1", "conv2")
            for c in convs:
                rows = out if c == convs[-1] else out // (4 if bottleneck else 1)
                model[f"res{s}.{i}.{c}.weight"] = np.zeros((rows, 1, 1, 1), np.float32)
        out *= 2
    return model


def write(path, obj):
    with open(path, "wb") as f:
        pickle.dump(obj, f)
    return str(path)


def facts(depth=18, in_channels=3, res2=64):
    return {"depth": depth, "stem_channels": 64, "res2_channels": res2, "in_channels": in_channels}


def ours(model):
    return {"model": model, "__author__": "ssl_jax", "matching_heuristics": True}


@pytest.mark.parametrize("depth", [18, 34, 50, 101])
def test_a_matching_backbone_passes_and_is_described(tmp_path, depth):
    path = write(tmp_path / "w.pkl", ours(backbone(depth)))
    found = weights.check(path, facts(depth, res2=64 if depth < 50 else 256))
    assert found["blocks"] == weights.BLOCKS[depth]
    assert found["bottleneck"] == (depth >= 50) and found["in_channels"] == 3


def test_another_depth_names_the_depth_to_set(tmp_path):
    path = write(tmp_path / "r18.pkl", ours(backbone(18)))
    with pytest.raises(
        weights.WeightsError,
        match=r"ResNet-18, the config builds ResNet-50 "
        r"\(set MODEL.RESNETS.DEPTH 18\).*RES2_OUT_CHANNELS 64",
    ):
        weights.check(path, facts(50, res2=256))
    # ResNet-34 and -50 have the same block counts: the block kind tells them apart
    path = write(tmp_path / "r50.pkl", ours(backbone(50)))
    with pytest.raises(weights.WeightsError, match=r"ResNet-50, the config builds ResNet-34"):
        weights.check(path, facts(34))


def test_a_grey_export_under_an_rgb_config_says_how_to_feed_grey(tmp_path):
    path = write(tmp_path / "grey.pkl", ours(backbone(18, in_channels=1)))
    with pytest.raises(weights.WeightsError, match="reads 1 input channel.*INPUT.FORMAT L"):
        weights.check(path, facts(18, in_channels=3))
    assert weights.check(path, facts(18, in_channels=1))["in_channels"] == 1


def test_a_torchvision_checkpoint_is_refused(tmp_path):
    pth = tmp_path / "r50.pth"
    with zipfile.ZipFile(pth, "w") as z:  # torch.save's format: a zip archive
        z.writestr("archive/data.pkl", b"")
    with pytest.raises(weights.WeightsError, match="not a Detectron2 pickle.*--format=detectron2"):
        weights.check(str(pth), facts())
    legacy = write(tmp_path / "legacy.pth", {"conv1.weight": np.zeros((64, 3, 7, 7))})
    with pytest.raises(weights.WeightsError, match="torchvision"):
        weights.check(legacy, facts())


def test_a_pickle_without_author_is_refused(tmp_path):
    """moco#45 / detectron2#5163: {'model': ...} without '__author__', or with an 'epoch' key."""
    path = write(tmp_path / "bare.pkl", {"model": backbone(), "epoch": 200})
    with pytest.raises(weights.WeightsError, match="without 'model' and '__author__'.*Caffe2"):
        weights.check(path, facts())
    path = write(tmp_path / "flat.pkl", backbone())
    with pytest.raises(weights.WeightsError, match="__author__"):
        weights.check(path, facts())
    with pytest.raises(weights.WeightsError, match="no such file"):
        weights.check(str(tmp_path / "missing.pkl"), facts())
    (tmp_path / "junk.pkl").write_bytes(b"not a pickle")
    with pytest.raises(weights.WeightsError, match="unreadable pickle"):
        weights.check(str(tmp_path / "junk.pkl"), facts())


def test_a_full_detector_checkpoint_is_not_checked(tmp_path):
    path = write(tmp_path / "det.pkl", ours({"backbone.bottom_up.stem.conv1.weight": np.zeros(1)}))
    assert weights.check(path, facts()) is None


def test_backbone_problems_ignore_the_heads_a_backbone_file_never_had():
    incompatible = types.SimpleNamespace(
        missing_keys=[
            "roi_heads.box_predictor.cls_score.weight",
            "proposal_generator.rpn_head.conv.weight",
            "backbone.fpn_lateral2.weight",
            "roi_heads.res5.norm.weight",
            "backbone.bottom_up.res3.1.conv2.weight",
        ],
        unexpected_keys=["res9.0.conv1.weight"],
        incorrect_shapes=[("roi_heads.res5.0.conv1.weight", (512, 256, 3, 3), (512, 256, 1, 1))],
    )
    assert weights.backbone_problems(incompatible) == [
        "missing backbone.bottom_up.res3.1.conv2.weight",
        "unexpected res9.0.conv1.weight",
        "shape roi_heads.res5.0.conv1.weight: checkpoint (512, 256, 3, 3), model (512, 256, 1, 1)",
    ]
