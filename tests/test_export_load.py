"""The torchvision export says how to load it: the Python lines of `<out>.json` (also printed),
run as written, build the run's ResNet, load the weights with `strict=True` and give the features of
`ssl_jax.load_encoder` on the same uint8 images (grey default job, an RGB CIFAR-stem run at width
1/8, CMC's two encoders on Lab).

They run against the real torchvision, which `launch/setup.sh` installs with its torch as a pair;
a torchvision that is installed but does not import (one built for another torch) fails here.
Without torchvision installed at all the lines run against a stand-in with torchvision's ResNet
names, stock shapes (3-channel ImageNet stem, 1000-way `fc`) and `_make_layer`
(`tests/torch_resnet.py`)."""

import importlib.util
import json
import sys
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch not installed (bash launch/setup.sh)")

import torch_resnet  # noqa: E402

from configs import cmc_color_fashion_mnist, common, sce_fashion_mnist  # noqa: E402
from ssl_jax import export  # noqa: E402
from ssl_jax.evaluate.encoder import load_encoder  # noqa: E402
from tests.helpers import save_random_workdir, tiny_config  # noqa: E402

TOL = 1e-4


def _stock(depth: int):
    class ResNet(torch_resnet.TorchResNet):
        """torchvision.models.resnetNN(): 3-channel ImageNet stem, width 1, `fc` to 1000."""

        def __init__(self):
            super().__init__(depth=depth)
            self.fc = torch.nn.Linear(self.inplanes, 1000)

        def forward(self, x):
            return self.fc(super().forward(x))

    return ResNet


def _torchvision():
    if importlib.util.find_spec("torchvision") is not None:
        import torchvision  # installed: it must import beside this torch

        return torchvision
    resnet = types.SimpleNamespace(
        BasicBlock=torch_resnet.BasicBlock, Bottleneck=torch_resnet.Bottleneck
    )
    models = types.SimpleNamespace(resnet=resnet, **{f"resnet{d}": _stock(d) for d in (18, 50)})
    stand_in = types.ModuleType("torchvision")  # not installed
    stand_in.models = models
    return stand_in


def _rgb_cifar_stem():
    c = tiny_config()
    c.model.stem = "cifar"
    c.data.channels = 3
    c.data.mean, c.data.std = common.CIFAR10_MEAN, common.CIFAR10_STD
    return c


def _cmc_wide_stem():
    """CMC's runlocal encoders (first stage 4 wide) with a stem twice as wide, as CMC's and
    PyContrast's 64-channel stems before width-0.5 stages: the lines rebuild the stages on it."""
    c = cmc_color_fashion_mnist.get_config("runlocal")
    c.model.stem_width = 8
    return c


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """name → (workdir, channels, image size): the default job's model (ResNet-18, ImageNet stem,
    grey), an RGB CIFAR-stem ResNet-18 at width 1/8, CMC's Lab encoders with a wider stem (fresh
    states with randomised BN, `helpers.save_random_workdir`)."""
    root = tmp_path_factory.mktemp("export_load")
    configs = {
        "grey": (sce_fashion_mnist.get_config(), 1, 28),
        "rgb": (_rgb_cifar_stem(), 3, 16),
        "cmc_lab": (_cmc_wide_stem(), 3, 32),
    }
    return {
        name: (save_random_workdir(c, str(root / name), seed=i), channels, size)
        for i, (name, (c, channels, size)) in enumerate(configs.items())
    }


def _run_lines(facts, images_nchw, x=None, out="features"):
    """Execute the JSON's Python lines as written (torchvision imported by them): their `out`."""
    scope = {"images": torch.from_numpy(images_nchw), "x": x}
    old = sys.modules.get("torchvision")
    sys.modules["torchvision"] = _torchvision()
    try:
        exec("\n".join(facts["python"]), scope)
    finally:
        if old is None:
            sys.modules.pop("torchvision")
        else:
            sys.modules["torchvision"] = old
    return scope[out].numpy()


@pytest.mark.parametrize("name", ["grey", "rgb"])
def test_lines_load_strictly_and_match_load_encoder(runs, name, tmp_path, capsys):
    workdir, channels, size = runs[name]
    out = str(tmp_path / "enc.pth")
    export.export(workdir, "torchvision", out)
    with open(tmp_path / "enc.json") as f:
        facts = json.load(f)
    printed = capsys.readouterr().out
    assert export.describe(facts) in printed and "strict=True" in printed

    enc = load_encoder(workdir)
    stem = enc.config.model.stem
    assert facts["in_channels"] == channels and facts["stem"] == stem
    assert (facts["maxpool"] is None) == (stem != "imagenet")  # cifar and stride2: no max-pool
    assert facts["mean"] == list(enc.config.data.mean) and facts["step"] == enc.step
    assert facts["feature_dim"] == enc.feature_dim and facts["input_size"] == size

    images = np.random.default_rng(0).integers(0, 256, (4, size, size, channels), np.uint8)
    ours = np.asarray(enc.features(enc.normalize(images)))
    theirs = _run_lines(facts, images.transpose(0, 3, 1, 2).copy())
    err = float(np.max(np.abs(ours - theirs)) / np.max(np.abs(ours)))
    print(f"{name}: features {ours.shape}, max |ssl_jax - torch| / max |ssl_jax| = {err:.2e}")
    assert err <= TOL


def test_two_encoders_on_lab_each_get_their_lines(runs, tmp_path):
    """CMC: one file and one JSON per encoder, each reading its channels of the Lab input, which
    no torch transform computes (the JSON says so and names `Encoder.normalize`)."""
    workdir, _, size = runs["cmc_lab"]
    paths = export.export(workdir, "torchvision", str(tmp_path / "cmc.pth"))
    enc = load_encoder(workdir)
    images = np.random.default_rng(1).integers(0, 256, (4, size, size, 3), np.uint8)
    x = np.asarray(enc.normalize(images))
    theirs = []
    for path in paths:
        with open(export.facts_path(path)) as f:
            facts = json.load(f)
        lo, hi = facts["input_channels"]
        assert facts["input"] == "color_space:lab" and "no torchvision transform" in facts["layout"]
        xi = torch.from_numpy(x[..., lo:hi].transpose(0, 3, 1, 2).copy())
        theirs.append(_run_lines(facts, images, x=xi))
    assert [export.facts_path(p)[-len("encoder1.json") :] for p in paths] == [
        "encoder1.json",
        "encoder2.json",
    ]
    ours = np.asarray(enc.features(x))
    np.testing.assert_allclose(np.concatenate(theirs, axis=1), ours, rtol=TOL, atol=TOL)


def test_json_out_is_refused(runs, tmp_path):
    with pytest.raises(export.ExportError, match="json"):
        export.export(runs["rgb"][0], "torchvision", str(tmp_path / "enc.json"))


def test_head_lines_give_the_probe_logits(runs, tmp_path):
    from ssl_jax.evaluate.linear_probe import save_head

    workdir, channels, size = runs["rgb"]
    rng = np.random.default_rng(2)
    kernel, bias = (
        rng.normal(size=(64, 5)).astype(np.float32),
        rng.normal(size=5).astype(np.float32),
    )
    save_head(str(tmp_path / "probe_head.npz"), kernel, bias)
    export.export(workdir, "torchvision", str(tmp_path / "clf.pth"), head=str(tmp_path))
    with open(tmp_path / "clf.json") as f:
        facts = json.load(f)
    assert facts["num_classes"] == 5 and "m.fc = torch.nn.Linear(64, 5)" in facts["python"]
    images = rng.integers(0, 256, (3, size, size, channels), np.uint8)
    enc = load_encoder(workdir)
    ours = np.asarray(enc.features(enc.normalize(images))) @ kernel + bias
    theirs = _run_lines(facts, images.transpose(0, 3, 1, 2).copy(), out="logits")
    np.testing.assert_allclose(theirs, ours, rtol=TOL, atol=TOL * np.abs(ours).max())
