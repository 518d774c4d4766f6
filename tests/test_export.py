"""Export: torchvision state_dict parity with a plain-torch ResNet, the Detectron2 pickle against
MoCo's converter rules (every key, every shape), the shipped Detectron2 configs, bad input."""

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")

from torch_resnet import TorchResNet  # noqa: E402

from configs import mocov2_imagenet  # noqa: E402
from ssl_jax import checkpoint, export  # noqa: E402
from ssl_jax.evaluate.encoder import load_encoder  # noqa: E402
from tests.helpers import save_random_workdir, tiny_config  # noqa: E402

TOL = 1e-4
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _imagenet_r18():
    c = tiny_config()
    c.model.stem = "imagenet"
    c.model.width = 1.0  # what Detectron2 builds
    c.data.channels = 3
    c.data.mean, c.data.std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    return c


@pytest.fixture(scope="module")
def workdirs(pretrained_workdir, tmp_path_factory):
    """ResNet-18 CIFAR stem (2 real pretraining steps), ResNet-18 ImageNet stem and the ResNet-50
    of `configs/mocov2_imagenet.py:runlocal` (fresh states with randomised BN, see helpers)."""
    root = tmp_path_factory.mktemp("export")
    return {
        "r18_cifar": (pretrained_workdir, 18, "cifar", 0.125, 1),
        "r18_imagenet": (
            save_random_workdir(_imagenet_r18(), str(root / "r18"), seed=1),
            18,
            "imagenet",
            1.0,
            3,
        ),
        "r50": (
            save_random_workdir(mocov2_imagenet.get_config("runlocal"), str(root / "r50"), seed=2),
            50,
            "imagenet",
            1.0,
            3,
        ),
    }


def _relative_error(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@pytest.mark.parametrize("name", ["r18_cifar", "r18_imagenet", "r50"])
def test_torchvision_parity(workdirs, name, tmp_path):
    workdir, depth, stem, width, channels = workdirs[name]
    out = str(tmp_path / f"{name}.pth")
    export.export(workdir, "torchvision", out)
    sd = torch.load(out)
    model = TorchResNet(depth=depth, stem=stem, width=width, in_chans=channels)
    model.load_state_dict(sd, strict=True)
    model.eval()
    assert not any(k.startswith("fc.") for k in sd)
    assert sd["conv1.weight"].shape[1:] == (channels, *(2 * (7 if stem == "imagenet" else 3,)))
    assert int(sd["bn1.num_batches_tracked"]) == load_encoder(workdir).step
    x = np.random.default_rng(0).normal(size=(4, 20, 20, channels)).astype(np.float32)
    ours = np.asarray(load_encoder(workdir).features(x))
    with torch.no_grad():
        ref = model(torch.from_numpy(x.transpose(0, 3, 1, 2).copy())).numpy()
    err = _relative_error(ours, ref)
    print(f"{name}: features {ours.shape}, max |ours - torch| / max |torch| = {err:.2e}")
    assert err <= TOL


def test_head_is_exported_as_fc(workdirs, tmp_path):
    workdir, depth, stem, width, channels = workdirs["r18_imagenet"]
    rng = np.random.default_rng(3)
    kernel = rng.normal(size=(512, 7)).astype(np.float32)  # ResNet-18 at width 1: 512 features
    bias = rng.normal(size=(7,)).astype(np.float32)
    probe = tmp_path / "probe"
    probe.mkdir()
    from ssl_jax.evaluate.linear_probe import save_head

    save_head(str(probe / "probe_head.npz"), kernel, bias)
    out = str(tmp_path / "with_head.pth")
    export.export(workdir, "torchvision", out, head=str(probe))
    sd = torch.load(out)
    model = TorchResNet(depth=depth, stem=stem, width=width, in_chans=channels)
    model.fc = torch.nn.Linear(512, 7)
    model.load_state_dict(sd, strict=True)
    model.eval()
    x = rng.normal(size=(2, 16, 16, 3)).astype(np.float32)
    with torch.no_grad():
        logits = model.fc(model(torch.from_numpy(x.transpose(0, 3, 1, 2).copy()))).numpy()
    ours = np.asarray(load_encoder(workdir).features(x)) @ kernel + bias
    assert _relative_error(ours, logits) <= TOL
    # a head of another encoder is refused
    save_head(str(probe / "probe_head.npz"), kernel[:100], bias)
    with pytest.raises(export.ExportError, match="another encoder"):
        export.export(workdir, "torchvision", str(tmp_path / "bad.pth"), head=str(probe))
    assert not (tmp_path / "bad.pth").exists()


def _moco_converter_names(torchvision_keys):
    """MoCo's detection/convert-pretrain-to-detectron2.py rules, re-stated independently on keys
    as they read in a MoCo checkpoint ('module.encoder_q.' prefix); num_batches_tracked dropped."""
    out = {}
    for key in torchvision_keys:
        k = "module.encoder_q." + key  # how the key reads in a MoCo checkpoint
        if not k.startswith("module.encoder_q.") or k.endswith("num_batches_tracked"):
            continue
        k = k.replace("module.encoder_q.", "")
        new = k if "layer" in k else "stem." + k
        for t in range(1, 5):
            new = new.replace(f"layer{t}", f"res{t + 1}")
        for t in range(1, 4):
            new = new.replace(f"bn{t}", f"conv{t}.norm")
        new = new.replace("downsample.0", "shortcut").replace("downsample.1", "shortcut.norm")
        out[key] = new
    return out


def _detectron2_shapes(depth, width):
    """Every parameter / buffer of Detectron2's ResNet (build_resnet_backbone: BasicStem, then
    res2..res5 of BasicBlock / BottleneckBlock, shortcut where in != out channels) with shapes."""
    blocks = {18: (2, 2, 2, 2), 50: (3, 4, 6, 3)}[depth]
    base = int(round(64 * width))
    shapes = {}

    def conv(name, out_c, in_c, k):
        shapes[f"{name}.weight"] = (out_c, in_c, k, k)
        for leaf in ("weight", "bias", "running_mean", "running_var"):
            shapes[f"{name}.norm.{leaf}"] = (out_c,)

    conv("stem.conv1", base, 3, 7)
    in_c = base
    for s, n in enumerate(blocks):
        mid = base * 2**s
        out_c = mid * (4 if depth == 50 else 1)
        for b in range(n):
            name = f"res{s + 2}.{b}"
            if b == 0 and in_c != out_c:
                conv(f"{name}.shortcut", out_c, in_c, 1)
            if depth == 50:
                conv(f"{name}.conv1", mid, in_c, 1)
                conv(f"{name}.conv2", mid, mid, 3)
                conv(f"{name}.conv3", out_c, mid, 1)
            else:
                conv(f"{name}.conv1", out_c, in_c, 3)
                conv(f"{name}.conv2", out_c, out_c, 3)
            in_c = out_c
    return shapes


@pytest.mark.parametrize("name", ["r18_imagenet", "r50"])
def test_detectron2_pickle(workdirs, name, tmp_path):
    workdir, depth, _, width, _ = workdirs[name]
    pth, pkl = str(tmp_path / "m.pth"), str(tmp_path / "m.pkl")
    export.export(workdir, "torchvision", pth)
    export.export(workdir, "detectron2", pkl)
    sd = torch.load(pth)
    with open(pkl, "rb") as f:
        obj = pickle.load(f)
    assert obj["matching_heuristics"] is True and obj["__author__"] == "ssl_jax"
    model = obj["model"]
    names = _moco_converter_names(sd)
    assert sorted(model) == sorted(names.values())
    for key, new in names.items():
        assert isinstance(model[new], np.ndarray) and model[new].dtype == np.float32
        np.testing.assert_array_equal(model[new], sd[key].numpy(), err_msg=key)
    expected = _detectron2_shapes(depth, width)
    assert set(model) == set(expected)
    for key, shape in expected.items():
        assert model[key].shape == shape, key
    assert "res2.0.shortcut.norm.running_var" in model or depth == 18


def test_detectron2_refuses_cifar_stem_and_writes_nothing(workdirs, tmp_path):
    out = tmp_path / "x.pkl"
    with pytest.raises(export.ExportError, match="stem"):
        export.export(workdirs["r18_cifar"][0], "detectron2", str(out))
    assert not out.exists()
    # an existing file stays intact when an export fails
    out.write_bytes(b"old")
    with pytest.raises(checkpoint.CheckpointError):
        export.export(str(tmp_path / "missing"), "torchvision", str(out))
    assert out.read_bytes() == b"old" and os.listdir(tmp_path) == ["x.pkl"]


def test_detectron2_refuses_a_width_it_cannot_build_and_takes_grey(tmp_path):
    narrow = _imagenet_r18()
    narrow.model.width = 0.25
    workdir = save_random_workdir(narrow, str(tmp_path / "narrow"), seed=5)
    with pytest.raises(export.ExportError, match=r"width=0.25.*--config.model.width=1"):
        export.export(workdir, "detectron2", str(tmp_path / "narrow.pkl"))
    assert not (tmp_path / "narrow.pkl").exists()
    grey = _imagenet_r18()
    grey.data.channels, grey.data.mean, grey.data.std = 1, (0.286,), (0.353,)
    workdir = save_random_workdir(grey, str(tmp_path / "grey"), seed=6)
    pkl = str(tmp_path / "grey.pkl")
    export.export(workdir, "detectron2", pkl)
    with open(pkl, "rb") as f:
        assert pickle.load(f)["model"]["stem.conv1.weight"].shape == (64, 1, 7, 7)
    facts = json.load(open(export.facts_path(pkl)))
    assert facts["detectron2_options"] == (
        f"MODEL.WEIGHTS {pkl} MODEL.RESNETS.DEPTH 18 MODEL.RESNETS.RES2_OUT_CHANNELS 64 "
        "INPUT.FORMAT L MODEL.PIXEL_MEAN [72.93] MODEL.PIXEL_STD [90.015]"
    )


def test_detectron2_configs():
    yaml = pytest.importorskip("yaml")
    folder = os.path.join(ROOT, "configs", "detectron2")
    configs = {}
    for name in sorted(os.listdir(folder)):  # the CPU study's R18 config: tests/detection/
        with open(os.path.join(folder, name)) as f:
            configs[name] = yaml.safe_load(f)

    def resolved(name):
        c = configs[name]
        base = resolved(c["_BASE_"]) if "_BASE_" in c else {}
        return _merge(base, {k: v for k, v in c.items() if k != "_BASE_"})

    voc = resolved("pascal_voc_R_50_C4_24k_ssl_jax.yaml")
    coco = resolved("coco_R_50_FPN_1x_ssl_jax.yaml")
    for c in (voc, coco):
        m = c["MODEL"]
        assert m["RESNETS"]["STRIDE_IN_1X1"] is False and m["RESNETS"]["NORM"] == "SyncBN"
        assert c["INPUT"]["FORMAT"] == "RGB"
        np.testing.assert_allclose(m["PIXEL_MEAN"], [255 * v for v in (0.485, 0.456, 0.406)])
        np.testing.assert_allclose(m["PIXEL_STD"], [255 * v for v in (0.229, 0.224, 0.225)])
        assert m["BACKBONE"]["FREEZE_AT"] == 0
    assert voc["MODEL"]["ROI_HEADS"]["NUM_CLASSES"] == 20
    assert coco["MODEL"]["FPN"]["NORM"] == "SyncBN" and coco["SOLVER"]["MAX_ITER"] == 90000


def _merge(base, over):
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


@pytest.mark.slow
def test_command_line(workdirs, tmp_path):
    """`python -m ssl_jax.export` end to end (a fresh process: JAX start-up dominates)."""
    out = str(tmp_path / "cli.pth")
    cmd = [
        sys.executable,
        "-m",
        "ssl_jax.export",
        f"--workdir={workdirs['r18_cifar'][0]}",
        "--format=torchvision",
        f"--out={out}",
    ]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "layer4.1.bn2.running_var" in torch.load(out)
    bad = subprocess.run(
        [*cmd[:4], "--format=detectron2", f"--out={tmp_path / 'x.pkl'}"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    assert bad.returncode == 2 and "error: Detectron2's ResNet has the ImageNet stem" in bad.stderr
    assert not (tmp_path / "x.pkl").exists()


def test_every_resnet_stem_has_its_torch_layers():
    """A new stem in `models/resnet.py` gets its torch conv1 / max-pool in the export."""
    from ssl_jax import export
    from ssl_jax.models import resnet

    assert set(export.STEM_LAYERS) == set(resnet.STEMS)
    assert export.STEM_LAYERS["stride2"] == ({"kernel_size": 3, "stride": 2, "padding": 1}, None)
