"""InfoMin Table 5 on STL-10 (`configs/views/stl10_table5.py` → `configs/infomin_views_stl10_table5.py`):
the paper's splits and CMC's AlexNet recipe, and both stages at `:runlocal` sizes end to end."""

import json
import math
import os

import pytest

from ssl_jax import configs, export, validation, view_learning
from tests.data.data_helpers import make_fashion_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VIEWS = os.path.join(ROOT, "configs/views/stl10_table5.py")
CMC = os.path.join(ROOT, "configs/infomin_views_stl10_table5.py")


def test_configs_are_table5s_setup():
    splits = {m: configs.load(f"{VIEWS}:mode={m}") for m in ("unsupervised", "supervised", "semi")}
    assert [(c.data.train_split, c.num_labelled) for c in splits.values()] == [
        ("unlabelled", 0),
        ("train", 5000),
        ("train+unlabelled", 5000),
    ]
    assert all(
        (c.lr_g, c.lr_critic, c.data.image_size) == (2e-4, 6e-4, 64) for c in splits.values()
    )
    with pytest.raises(configs.ConfigError, match="mode='semii'"):
        configs.load(f"{VIEWS}:mode=semii")
    c = configs.load(f"{CMC}:flow=/g/flow.npz")
    validation.validate(c, num_devices=8)
    assert (c.data.name, c.data.train_split, c.method_config.bank_size) == (
        "stl10",
        "train+unlabelled",
        105_000,
    )
    assert (c.data.eval_train_split, c.data.eval_test_split, c.data.image_size) == (
        "train",
        "test",
        64,
    )
    assert (c.model.backbone, c.model.stem, c.model.width) == ("alexnet", "cifar", 1.0)
    assert c.data.recipes.cmc[-1] == {"op": "learned_flow", "path": "/g/flow.npz"}
    assert configs.load(CMC).data.recipes.cmc[-1]["space"] == "ydbdr"  # raw views
    mc = c.method_config
    assert (mc.temperature, mc.num_negatives, mc.bank_momentum, mc.loss) == (0.1, 16384, 0.5, "nce")
    assert (c.global_batch_size, c.num_epochs, c.optim.base_lr) == (256, 240.0, 0.03)


def test_both_stages_runlocal(tmp_path):
    """Semi-supervised g (2 steps), then CMC with the AlexNet on its views (2 steps) and its kNN
    monitor, on a 256-image color_fashion_mnist."""
    from ssl_jax import train

    fashion = make_fashion_dir(str(tmp_path / "fashion"), num_train=256, num_test=64)
    cache = str(tmp_path / "cache")
    vc = configs.load(f"{VIEWS}:runlocal")
    vc.data.data_dir, vc.data.color_fashion_mnist.cache_dir = fashion, cache
    vc.steps = 2
    path = view_learning.learn_views(vc, str(tmp_path / "views"))
    c = configs.load(f"{CMC}:runlocal,flow={path}")
    c.data.data_dir, c.data.color_fashion_mnist.cache_dir = fashion, cache
    c.total_steps = 2
    c.evals.knn.update(every_steps=0, num_train=256, num_test=64)  # at the last step
    workdir = str(tmp_path / "cmc")
    train.train_and_evaluate(c, workdir)
    rows = [json.loads(r) for r in open(os.path.join(workdir, "metrics.jsonl"))]
    assert [r["step"] for r in rows if "train/loss" in r][-1] == 2
    assert math.isfinite(rows[-1]["eval/knn_top1"])
    # the AlexNet has no torchvision/Detectron2 layout: one clear error, nothing written
    out = str(tmp_path / "encoder.pth")
    with pytest.raises(export.ExportError, match="backbone is 'alexnet'"):
        export.export(workdir, "detectron2", out)
    assert not os.path.exists(out)
