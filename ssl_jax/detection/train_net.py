"""Fine-tune Detectron2 from an ssl_jax export: detectron2's `tools/train_net.py`, with what MoCo's
`detection/train_net.py` adds and the checks a user of an export needs.

```
python -m ssl_jax.export --workdir=W --format=detectron2 --out=r50.pkl
python -m ssl_jax.detection --config-file configs/detectron2/pascal_voc_R_50_C4_24k_ssl_jax.yaml \
    --num-gpus 8 MODEL.WEIGHTS r50.pkl
python -m ssl_jax.detection --config-file ... --eval-only MODEL.WEIGHTS out/model_final.pth
```
Flags are detectron2's (`--config-file`, `--num-gpus`, `--num-machines`, `--machine-rank`,
`--dist-url`, `--eval-only`, `--resume`, trailing `KEY VALUE` overrides) plus `--draw N` (N test
images with their predicted and true boxes, `OUTPUT_DIR/predictions.png`, after training or
evaluation) and `--register-coco NAME=JSON[:IMAGE_ROOT]` (a COCO-format set of yours, evaluated
by `COCOEvaluator`). What it adds to detectron2's script:
- `Res5ROIHeadsExtraNorm` in the ROI-heads registry (MoCo: a norm after the res5 head of C4
  models, `Base-RCNN-C4-BN.yaml`), whose res5 is built of the depth's own blocks (BasicBlocks for
  ResNet-18/34, where detectron2's `Res5ROIHeads` always builds bottlenecks), so an R18 export
  loads into the C4 configs too;
- the evaluator each data set's `evaluator_type` names (`COCOEvaluator`, `PascalVOCDetectionEvaluator`);
- the CPU study's data set, `fashion_mnist_det_train` / `_test` (`ssl_jax.detection.data`);
- on one process, `SyncBN` → `BN` (the same statistics) and `MODEL.DEVICE cpu` without CUDA, each
  said in one line;
- `MODEL.WEIGHTS` checked before the model is built (`weights.check`: a torchvision `.pth`, a
  pickle without `__author__`, another depth / width / input channels), and after loading: a
  backbone parameter missing, unexpected or of another shape is an `error:` line, not a log line.
Imported only by this command: the library never needs Detectron2.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

# detectron2 of this commit scripts a few ops with torch.jit, which torch 2.14 calls deprecated at
# every start: two lines of noise before each run
warnings.filterwarnings(
    "ignore", message=".*torch.jit.script.* is deprecated", category=FutureWarning
)

import torch  # noqa: E402
from detectron2.checkpoint import DetectionCheckpointer  # noqa: E402
from detectron2.config import get_cfg  # noqa: E402
from detectron2.data import DatasetCatalog, MetadataCatalog  # noqa: E402
from detectron2.data.datasets import load_coco_json  # noqa: E402
from detectron2.engine import DefaultTrainer, default_argument_parser, default_setup, launch  # noqa: E402
from detectron2.evaluation import COCOEvaluator, PascalVOCDetectionEvaluator, verify_results  # noqa: E402
from detectron2.layers import get_norm  # noqa: E402
from detectron2.modeling import ROI_HEADS_REGISTRY  # noqa: E402
from detectron2.modeling.backbone.resnet import BasicBlock, ResNet  # noqa: E402
from detectron2.modeling.roi_heads import Res5ROIHeads  # noqa: E402
from detectron2.utils import comm  # noqa: E402

from ssl_jax.detection import data, weights  # noqa: E402

logger = logging.getLogger("ssl_jax.detection")


@ROI_HEADS_REGISTRY.register()
class Res5ROIHeadsExtraNorm(Res5ROIHeads):
    """`Res5ROIHeads` with a norm layer (`MODEL.RESNETS.NORM`) after its res5 stage, as the MoCo
    paper's C4 transfer (MoCo's `detection/train_net.py`); res5 of BasicBlocks for ResNet-18/34."""

    @classmethod
    def _build_res5_block(cls, cfg):
        r = cfg.MODEL.RESNETS
        if r.DEPTH in weights.BASIC_DEPTHS:
            out_channels = r.RES2_OUT_CHANNELS * 8  # res5 is 8x res2
            num = weights.BLOCKS[r.DEPTH][3]
            blocks = ResNet.make_stage(
                BasicBlock,
                num,
                stride_per_block=[2] + [1] * (num - 1),
                in_channels=out_channels // 2,
                out_channels=out_channels,
                norm=r.NORM,
            )
            res5 = torch.nn.Sequential(*blocks)
        else:
            res5, out_channels = super()._build_res5_block(cfg)
        res5.add_module("norm", get_norm(r.NORM, out_channels))
        return res5, out_channels


def register_datasets(root: str | None = None) -> None:
    """`fashion_mnist_det_<split>` in detectron2's catalogs (COCO format, evaluator 'coco');
    the images are written on first load (`data.ensure`)."""
    root = root or data.default_root()
    for split in data.SPLITS:
        name = f"{data.NAME}_{split}"
        if name in DatasetCatalog.list():
            continue

        def load(split=split, name=name):
            return load_coco_json(data.annotation_path(data.ensure(root), split), root, name)

        DatasetCatalog.register(name, load)
        MetadataCatalog.get(name).set(
            json_file=data.annotation_path(root, split),
            image_root=root,
            evaluator_type="coco",
        )


class Trainer(DefaultTrainer):
    """detectron2's `DefaultTrainer` with the evaluator each data set names."""

    @classmethod
    def build_evaluator(cls, cfg, dataset_name, output_folder=None):
        output_folder = output_folder or os.path.join(cfg.OUTPUT_DIR, "inference")
        kind = MetadataCatalog.get(dataset_name).evaluator_type
        if kind == "coco":
            return COCOEvaluator(dataset_name, output_dir=output_folder)
        if kind == "pascal_voc":
            return PascalVOCDetectionEvaluator(dataset_name)
        raise NotImplementedError(f"no evaluator for {dataset_name} (evaluator_type {kind!r})")


def _uses(cfg, prefix: str) -> bool:
    return any(n.startswith(prefix) for n in (*cfg.DATASETS.TRAIN, *cfg.DATASETS.TEST))


def register_coco(spec: str) -> str:
    """`--register-coco NAME=JSON[:IMAGE_ROOT]`: a COCO-format set of the user's in the catalogs
    (evaluator 'coco'; images relative to IMAGE_ROOT, default the json's folder). Returns NAME."""
    name, eq, rest = spec.partition("=")
    json_file, _, image_root = rest.partition(":")
    if not eq or not name or not json_file:
        raise ValueError(f"--register-coco {spec!r}: give NAME=JSON[:IMAGE_ROOT]")
    if not os.path.isfile(json_file):
        raise ValueError(f"--register-coco {spec!r}: {json_file} is not a file")
    image_root = image_root or os.path.dirname(os.path.abspath(json_file))
    if name not in DatasetCatalog.list():
        from detectron2.data.datasets import register_coco_instances

        register_coco_instances(name, {}, json_file, image_root)
    return name


def build_config(config_file: str, opts, *, processes: int = 1, check_weights: bool = True):
    """The Detectron2 config of `config_file` + `opts` (KEY VALUE ...), with the one-process and
    CPU adjustments (and the lines that say them), `MODEL.WEIGHTS` checked (`weights.check`)
    before anything is built: (frozen cfg, notes). `weights.WeightsError` / `ValueError` on bad
    input."""
    cfg = get_cfg()
    if not config_file or not os.path.isfile(config_file):
        raise ValueError(f"--config-file {config_file!r}: no such file")
    cfg.merge_from_file(config_file)
    cfg.merge_from_list(list(opts))
    notes = []
    if processes == 1:
        norms = [
            n for n in ("RESNETS", "FPN", "ROI_BOX_HEAD", "ROI_MASK_HEAD")
            if cfg.MODEL[n].NORM == "SyncBN"
        ]  # fmt: skip
        for n in norms:
            cfg.MODEL[n].NORM = "BN"
        if norms:
            notes.append(f"one process: SyncBN is BN (the same statistics) in {', '.join(norms)}")
    if cfg.MODEL.DEVICE.startswith("cuda") and not torch.cuda.is_available():
        cfg.MODEL.DEVICE = "cpu"
        notes.append("no CUDA device: MODEL.DEVICE cpu")
    path = cfg.MODEL.WEIGHTS
    if check_weights and path and "://" not in path:
        weights.check(path, weights.config_facts(cfg))
    cfg.freeze()
    return cfg, notes


def setup(args):
    """`build_config` of the command line, then detectron2's `default_setup` (output folder, logs,
    seed); the weights are not checked when the run resumes its own checkpoint or only evaluates."""
    for spec in args.register_coco:
        register_coco(spec)
    cfg, notes = build_config(
        args.config_file,
        args.opts,
        processes=args.num_gpus * args.num_machines,
        check_weights=False,
    )
    resumes = args.resume and os.path.isfile(os.path.join(cfg.OUTPUT_DIR, "last_checkpoint"))
    path = cfg.MODEL.WEIGHTS
    if path and "://" not in path and not (resumes or args.eval_only):
        weights.check(path, weights.config_facts(cfg))
    default_setup(cfg, args)
    for note in notes:
        print(note, flush=True)
    return cfg


def check_loaded(model, path: str) -> int:
    """Loads the backbone pickle at `path` into `model` (as the trainer will) and raises
    `weights.WeightsError` naming any backbone parameter missing, unexpected or of another shape;
    returns the number of tensors loaded."""
    checkpointer = DetectionCheckpointer(model)
    checkpoint = checkpointer._load_file(path)
    loaded = len(checkpoint["model"])
    problems = weights.backbone_problems(checkpointer._load_model(checkpoint))
    if problems:
        shown = "; ".join(problems[:4]) + (
            f"; and {len(problems) - 4} more" if len(problems) > 4 else ""
        )
        raise weights.WeightsError(
            f"MODEL.WEIGHTS {path}: {len(problems)} backbone parameters did not load ({shown})"
        )
    return loaded


def draw_predictions(cfg, model, dataset_name: str, count: int, out: str) -> str:
    """`count` images of `dataset_name` with predicted boxes (score ≥ 0.5, labelled) and true boxes
    (thin), side by side in one PNG at `out`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from detectron2.data import detection_utils

    records = DatasetCatalog.get(dataset_name)[:count]
    names = MetadataCatalog.get(dataset_name).thing_classes
    fig, axes = plt.subplots(1, len(records), figsize=(3 * len(records), 3.3), squeeze=False)
    model.eval()
    for ax, record in zip(axes[0], records, strict=True):
        image = detection_utils.read_image(record["file_name"], format=cfg.INPUT.FORMAT)
        tensor = torch.as_tensor(np.ascontiguousarray(image.transpose(2, 0, 1)))
        with torch.no_grad():
            found = model([{"image": tensor, "height": image.shape[0], "width": image.shape[1]}])
        found = found[0]["instances"].to("cpu")
        ax.imshow(image[..., 0] if image.shape[-1] == 1 else image, cmap="gray")
        for ann in record.get("annotations", ()):
            x0, y0, x1, y1 = ann["bbox"][0], ann["bbox"][1], *ann["bbox"][:2]
            x1, y1 = x0 + ann["bbox"][2], y0 + ann["bbox"][3]
            ax.add_patch(plt.Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec="w", lw=0.6))
        keep = found.scores >= 0.5
        for box, cls, score in zip(
            found.pred_boxes.tensor[keep],
            found.pred_classes[keep],
            found.scores[keep],
            strict=True,
        ):
            x0, y0, x1, y1 = (float(v) for v in box)
            ax.add_patch(plt.Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec="tab:orange"))
            ax.text(
                x0,
                y0,
                f"{names[int(cls)]} {float(score):.2f}",
                color="tab:orange",
                fontsize=6,
                va="bottom",
            )
        ax.set_axis_off()
    fig.suptitle("orange: predicted (score ≥ 0.5); white: true boxes", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(args):
    register_datasets()
    cfg = setup(args)
    if _uses(cfg, data.NAME):
        data.ensure()
    if args.eval_only:
        model = Trainer.build_model(cfg)
        DetectionCheckpointer(model, save_dir=cfg.OUTPUT_DIR).resume_or_load(
            cfg.MODEL.WEIGHTS, resume=args.resume
        )
        results = Trainer.test(cfg, model)
        if comm.is_main_process():
            verify_results(cfg, results)
    else:
        trainer = Trainer(cfg)
        resumes = args.resume and trainer.checkpointer.has_checkpoint()
        path = cfg.MODEL.WEIGHTS
        if (
            path
            and "://" not in path
            and not resumes
            and weights.weights_facts(weights.read_pickle(path)["model"]) is not None
        ):
            loaded = check_loaded(trainer.checkpointer.model, path)
            print(
                f"{path}: {loaded} backbone tensors loaded, none missing or unexpected", flush=True
            )
        trainer.resume_or_load(resume=args.resume)
        results = trainer.train()
        model = trainer.model
    if args.draw and comm.is_main_process() and cfg.DATASETS.TEST:
        model = getattr(model, "module", model)
        out = draw_predictions(
            cfg,
            model,
            cfg.DATASETS.TEST[0],
            args.draw,
            os.path.join(cfg.OUTPUT_DIR, "predictions.png"),
        )
        print(f"wrote {out}", flush=True)
    return results


def _main_or_error(args):
    try:
        return main(args)
    except (weights.WeightsError, ValueError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)


def parse_args(argv=None):
    command = "python -m ssl_jax.detection"
    parser = default_argument_parser(
        epilog=f"""Examples:
  {command} --config-file configs/detectron2/pascal_voc_R_50_C4_24k_ssl_jax.yaml --num-gpus 8 \\
      <the export's printed options: MODEL.WEIGHTS r50.pkl MODEL.RESNETS.DEPTH 50 ...>
  {command} --config-file CONFIG --eval-only MODEL.WEIGHTS OUTPUT_DIR/model_final.pth
  {command} --config-file CONFIG --resume OUTPUT_DIR DIR   # go on from DIR's last checkpoint
"""
    )
    parser.prog = command
    parser.add_argument(
        "--register-coco",
        action="append",
        default=[],
        metavar="NAME=JSON[:IMAGE_ROOT]",
        help="register a COCO-format data set under NAME (repeatable), for DATASETS.TRAIN / TEST",
    )
    parser.add_argument(
        "--draw",
        type=int,
        default=0,
        metavar="N",
        help="after training / evaluation, draw N test images with their predicted boxes "
        "(OUTPUT_DIR/predictions.png)",
    )
    return parser.parse_args(argv)


def run(argv=None) -> None:
    args = parse_args(argv)
    print("Command Line Args:", args, flush=True)
    launch(
        _main_or_error,
        args.num_gpus,
        num_machines=args.num_machines,
        machine_rank=args.machine_rank,
        dist_url=args.dist_url,
        args=(args,),
    )


if __name__ == "__main__":
    run()
