"""Detectron2 with our exports, checked by Detectron2 itself: every shipped config loads an R50, an
R18 and a grey R18 export with no backbone parameter missing, unexpected or of another shape, and
its backbone (fed through its own preprocessing) gives our encoder's stages; each shipped config
fine-tunes a few iterations from a fresh export and is scored by `COCOEvaluator`; bad weights
are one `error:` line. Skipped without Detectron2, except where SSL_JAX_REQUIRE_DETECTRON2=1 (CI)."""

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

if os.environ.get("SSL_JAX_REQUIRE_DETECTRON2") == "1":
    import detectron2  # noqa: F401  (CI: a failed import fails the tests, none is skipped)
else:
    pytest.importorskip("detectron2", reason="Detectron2 not built (launch/build_detectron2.sh)")

import torch  # noqa: E402

from configs import mocov2_imagenet  # noqa: E402
from ssl_jax import export  # noqa: E402
from ssl_jax.detection import train_net, weights  # noqa: E402
from ssl_jax.evaluate.encoder import load_encoder  # noqa: E402
from tests.helpers import save_random_workdir, tiny_config  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = os.path.join(ROOT, "configs", "detectron2")
SHIPPED = sorted(n for n in os.listdir(CONFIGS) if n.endswith(".yaml") and not n.startswith("Base"))
TOL = 1e-4


def _r18(channels):
    c = tiny_config()
    c.model.stem, c.model.width = "imagenet", 1.0
    c.data.channels = channels
    c.data.mean = (0.485, 0.456, 0.406) if channels == 3 else (0.286,)
    c.data.std = (0.229, 0.224, 0.225) if channels == 3 else (0.353,)
    return c


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """{name: (workdir, pickle, the export's Detectron2 options)} of three fresh states with
    randomised BN (see helpers): the R50 of `mocov2_imagenet.py:runlocal`, an RGB and a grey
    ResNet-18 (ImageNet stem, width 1)."""
    root = tmp_path_factory.mktemp("d2")
    out = {}
    for name, config, seed in (
        ("r50", mocov2_imagenet.get_config("runlocal"), 2),
        ("r18", _r18(3), 3),
        ("r18_grey", _r18(1), 4),
    ):
        workdir = save_random_workdir(config, str(root / name), seed=seed)
        pkl = str(root / f"{name}.pkl")
        export.export(workdir, "detectron2", pkl)
        options = json.load(open(export.facts_path(pkl)))["detectron2_options"].split()
        out[name] = (workdir, pkl, options)
    return out


def _stages(model, images):
    """Global-average pools of res2..res5 of Detectron2's model on uint8 `[N, H, W, C]` images,
    through its own `preprocess_image` (PIXEL_MEAN / PIXEL_STD), concatenated `[N, sum(C)]`."""
    inputs = [
        {"image": torch.from_numpy(np.ascontiguousarray(x.transpose(2, 0, 1)))} for x in images
    ]
    with torch.no_grad():
        x = model.preprocess_image(inputs).tensor
        resnet = getattr(model.backbone, "bottom_up", model.backbone)
        x = resnet.stem(x)
        pools = []
        for stage in resnet.stages:
            x = stage(x)
            pools.append(x.mean(dim=(2, 3)))
        if len(pools) == 3:  # C4: res5 is the ROI head's (without its extra norm)
            x = model.roi_heads.res5[:-1](x)
            pools.append(x.mean(dim=(2, 3)))
    return torch.cat(pools, dim=1).numpy()


@pytest.mark.parametrize("config_name", SHIPPED)
@pytest.mark.parametrize("name", ["r50", "r18", "r18_grey"])
def test_detectron2_loads_every_backbone_parameter_and_computes_our_stages(
    exports, name, config_name
):
    from detectron2.modeling import build_model

    workdir, pkl, options = exports[name]
    cfg, notes = train_net.build_config(os.path.join(CONFIGS, config_name), options)
    assert any("SyncBN is BN" in n for n in notes) or "fashion" in config_name
    model = build_model(cfg).eval()
    loaded = train_net.check_loaded(model, pkl)  # raises on any backbone problem
    assert loaded == len(pickle.load(open(pkl, "rb"))["model"])
    encoder = load_encoder(workdir)
    channels = int(encoder.config.data.channels)
    images = np.random.default_rng(0).integers(0, 256, (2, 64, 64, channels), dtype=np.uint8)
    mean, std = np.asarray(encoder.config.data.mean), np.asarray(encoder.config.data.std)
    ours = np.asarray(encoder.features((images / 255.0 - mean) / std, stages=True))
    theirs = _stages(model, images)
    err = float(np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)))
    print(
        f"{name} in {config_name}: {loaded} tensors, stage pools {theirs.shape}, rel. err {err:.1e}"
    )
    assert ours.shape == theirs.shape and err <= TOL


def test_a_basic_block_res5_head_only_in_our_c4_head(exports):
    """Detectron2's own Res5ROIHeads builds a bottleneck res5 whatever the depth: an R18 export
    under it leaves res5 unloaded, which the load check names."""
    _, pkl, options = exports["r18"]
    from detectron2.modeling import build_model

    cfg, _ = train_net.build_config(
        os.path.join(CONFIGS, "pascal_voc_R_50_C4_24k_ssl_jax.yaml"),
        [*options, "MODEL.ROI_HEADS.NAME", "Res5ROIHeads"],
    )
    with pytest.raises(weights.WeightsError, match=r"backbone parameters did not load.*res5"):
        train_net.check_loaded(build_model(cfg), pkl)


def _tiny_coco(root, count, seed):
    """`count` 64-px RGB PNGs of two bright rectangles each (two classes), COCO json with boxes
    and polygons (the Mask R-CNN config reads masks)."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    os.makedirs(root, exist_ok=True)
    images, annotations = [], []
    for i in range(count):
        img = np.zeros((64, 64, 3), np.uint8)
        for k in range(2):
            x, y = (int(v) for v in rng.integers(0, 36, size=2))
            w, h = (int(v) for v in rng.integers(12, 28, size=2))
            img[y : y + h, x : x + w] = 200 if k else 120
            poly = [x, y, x + w, y, x + w, y + h, x, y + h]
            annotations.append(
                dict(id=len(annotations) + 1, image_id=i, category_id=k + 1, bbox=[x, y, w, h],
                     area=w * h, iscrowd=0, segmentation=[[float(v) for v in poly]])
            )  # fmt: skip
        Image.fromarray(img).save(os.path.join(root, f"{i}.png"))
        images.append(dict(id=i, file_name=f"{i}.png", width=64, height=64))
    categories = [dict(id=1, name="dim"), dict(id=2, name="bright")]
    path = os.path.join(root, "coco.json")
    json.dump(dict(images=images, annotations=annotations, categories=categories), open(path, "w"))
    return path


SHRINK = [
    *("INPUT.MIN_SIZE_TRAIN", "(64,)", "INPUT.MAX_SIZE_TRAIN", "64"),
    *("INPUT.MIN_SIZE_TEST", "64", "INPUT.MAX_SIZE_TEST", "64"),
    *("SOLVER.IMS_PER_BATCH", "2", "SOLVER.MAX_ITER", "3", "SOLVER.STEPS", "()"),
    *("SOLVER.WARMUP_ITERS", "1", "SOLVER.BASE_LR", "0.005", "SOLVER.CHECKPOINT_PERIOD", "100"),
    *("TEST.EVAL_PERIOD", "0", "TEST.PRECISE_BN.NUM_ITER", "2", "DATALOADER.NUM_WORKERS", "0"),
    *("MODEL.ROI_HEADS.NUM_CLASSES", "2", "MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE", "32"),
    *("MODEL.RPN.POST_NMS_TOPK_TRAIN", "64", "MODEL.RPN.POST_NMS_TOPK_TEST", "64"),
    *("MODEL.ROI_HEADS.SCORE_THRESH_TEST", "0.0"),  # boxes to score after 3 iterations
    *("DATASETS.TRAIN", "('tiny_train',)", "DATASETS.TEST", "('tiny_test',)"),
]


def _cli(args, tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "SSL_JAX_DETECTION_DATA": str(tmp_path / "data")}
    return subprocess.run(
        [sys.executable, "-m", "ssl_jax.detection", *args],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(
    "config_name, export_name",
    [
        ("coco_R_50_FPN_1x_ssl_jax.yaml", "r50"),
        ("pascal_voc_R_50_C4_24k_ssl_jax.yaml", "r18"),
        ("fashion_mnist_det_R18_FPN.yaml", "r18_grey"),
    ],
)
def test_each_shipped_config_fine_tunes_from_an_export_and_is_scored(
    exports, config_name, export_name, tmp_path
):
    _, pkl, options = exports[export_name]
    train = _tiny_coco(str(tmp_path / "train"), 4, 0)
    test = _tiny_coco(str(tmp_path / "test"), 2, 1)
    out = tmp_path / "out"
    run = _cli(
        [
            "--config-file", os.path.join(CONFIGS, config_name), "--num-gpus", "1", "--draw", "2",
            "--register-coco", f"tiny_train={train}", "--register-coco", f"tiny_test={test}",
            *options, *SHRINK, "OUTPUT_DIR", str(out),
        ],
        tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    assert f"{pkl}: " in run.stdout and "none missing or unexpected" in run.stdout
    assert "one process: SyncBN is BN" in run.stdout or "fashion" in config_name
    evals = [json.loads(line) for line in open(out / "metrics.json")]
    final = [r for r in evals if "bbox/AP" in r]
    assert final and np.isfinite(final[-1]["bbox/AP50"])  # COCOEvaluator scored the model
    if "coco_R_50_FPN" in config_name:
        assert "segm/AP" in final[-1]  # Mask R-CNN: masks scored too
    assert (out / "model_final.pth").exists() and (out / "predictions.png").stat().st_size > 0


def test_every_shipped_config_has_a_fine_tune_test():
    ran = {"coco_R_50_FPN_1x_ssl_jax.yaml", "pascal_voc_R_50_C4_24k_ssl_jax.yaml",
           "fashion_mnist_det_R18_FPN.yaml"}  # fmt: skip
    assert set(SHIPPED) == ran


def test_bad_weights_are_one_error_line_before_any_build(exports, tmp_path):
    _, pkl, options = exports["r18"]
    pth = tmp_path / "r18.pth"
    torch.save({"conv1.weight": torch.zeros(64, 3, 7, 7)}, pth)
    config = os.path.join(CONFIGS, "coco_R_50_FPN_1x_ssl_jax.yaml")
    run = _cli(["--config-file", config, "MODEL.WEIGHTS", str(pth), "OUTPUT_DIR", str(tmp_path)],
               tmp_path)  # fmt: skip
    lines = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert run.returncode == 2 and len(lines) == 1, run.stderr[-2000:]
    assert "not a Detectron2 pickle" in lines[0] and "Traceback" not in run.stderr
    # the same config with an R18 export and no depth override: named, in-process
    with pytest.raises(weights.WeightsError, match="set MODEL.RESNETS.DEPTH 18"):
        train_net.build_config(config, ["MODEL.WEIGHTS", pkl])
    with pytest.raises(ValueError, match="no such file"):
        train_net.build_config(str(tmp_path / "nope.yaml"), [])
