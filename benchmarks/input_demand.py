"""Does the host input pipeline keep up with an accelerator? (issue 18 item 5)

    python benchmarks/input_demand.py [--configs=mocov2_imagenet,...] [--batches=6] [--batch=32]
        [--images=96] [--host-cores=16] [--rates=docs/logs/accelerator_h100.jsonl]

For each config family at its real image size, `pipeline.train_iterator` (the tf.data pipeline the
trainer runs: decode once per image, every view's recipe, batching) reads an `image_folder` of JPEG
photos of ImageNet's typical size (about 500 × 375, encoded at quality 90: scikit-image's sample
photos, cropped at random offsets and sizes, so decoding is timed as on ImageNet), with
each placement of `MODES`: `host` (the whole recipe on the host), `device` (`data.device_ops`: crops
and flips on the host, the colour ops in the jitted step) and `crops` (also `data.device_crops=512`:
the host decodes and sends each image once, the step cuts the views). It prints views per CPU-second of the process (all threads: views/s per
fully used core, the figure that does not depend on what else runs on a shared machine), what
`--host-cores` such cores supply, the views/s the step demands at the img/s measured on an
accelerator (`--rates`: the JSON lines `benchmarks/accelerator.py --json` wrote; each placement uses
the step measured with it where there is one, else the host placement's step, which then
overstates the demand), and whether the host keeps up.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from benchmarks._common import load_config, write_photos  # noqa: E402

CONFIGS = (
    "mocov2_imagenet",
    "jcl_imagenet",
    "sce_imagenet",
    "sce_imagenet_multicrop",
    "infomin_imagenet",
    "cmc_imagenet",
)


def host_rate(config, batches: int) -> dict:
    """Views/s (wall) and views per CPU-second of `train_iterator` over `batches` batches (after 2
    warm-up batches that fill tf.data's buffers)."""
    from ssl_jax.data import pipeline

    it = pipeline.train_iterator(config, process_index=0, process_count=1)
    for _ in range(2):
        next(it)
    wall, cpu = time.perf_counter(), time.process_time()
    views = 0
    for _ in range(batches):
        batch = next(it)
        views += len(batch["index"]) * len(config.data.views)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"views_per_s": views / wall, "views_per_cpu_s": views / cpu}


# Where a view's ops run: (name, the overrides that select it).
MODES = (
    ("host", ("data.device_ops=False", "data.device_crops=0")),
    ("device", ("data.device_ops=True", "data.device_crops=0")),
    ("crops", ("data.device_ops=True", "data.device_crops=512")),
)
_NEUTRAL = ("data.name=", "data.data_dir=")  # the loop's photo folder: the step is the same


def placement(overrides) -> str:
    """The `MODES` name of an `accelerator.py --json` row's overrides (a row names the placement it
    ran with; one that names none ran the whole recipe on the host), or '' for other overrides."""
    options = {}
    for item in overrides:
        if item.startswith(_NEUTRAL):
            continue
        key, _, value = item.partition("=")
        if key not in ("data.device_ops", "data.device_crops"):
            return ""
        options[key] = value
    if options.get("data.device_crops", "0") != "0":
        return "crops"
    return "device" if options.get("data.device_ops") == "True" else "host"


def device_rates(path: str) -> dict:
    """{(config, placement): step img/s} from `accelerator.py --json` lines (bf16, no override but
    the placement and the photo folder; the largest batch measured at 256 or below)."""
    rates: dict = {}
    if not os.path.exists(path):
        return rates
    for line in open(path):
        r = json.loads(line)
        mode = placement(r.get("overrides", []))
        if r["dtype"] != "bfloat16" or not mode or r["batch"] > 256:
            continue
        key = (r["config"], mode)
        rates[key] = max(rates.get(key, 0.0), r["pipelined"])
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--batch", type=int, default=32, help="host batch of the timed pipeline")
    parser.add_argument("--batches", type=int, default=6, help="timed batches per measurement")
    parser.add_argument("--images", type=int, default=96, help="JPEG photos in the folder")
    parser.add_argument("--host-cores", type=int, default=16, help="cores of the accelerator host")
    parser.add_argument(
        "--rates", default=os.path.join(ROOT, "docs", "logs", "accelerator_h100.jsonl")
    )
    args = parser.parse_args()

    rates = device_rates(args.rates)
    folder = tempfile.mkdtemp(prefix="input_demand_")
    write_photos(folder, args.images)
    print(
        f"{args.images} JPEG photos (~500 × 375) in {folder}; {os.cpu_count()} cores here; supply "
        f"= views/CPU-s × {args.host_cores} host cores; demand = step img/s ({args.rates}) × views",
        flush=True,
    )
    header = "| config | views | placement | views/s (wall) | views/CPU-s | supply (16 cores) | demand | keeps up |"
    rows = [header, "|---|---|---|---|---|---|---|---|"]
    for name in args.configs.split(","):
        for mode, placed in MODES:
            config = load_config(
                name,
                batch=args.batch,
                dtype="float32",
                overrides=(
                    "data.name=image_folder",
                    f"data.data_dir={folder}",
                    "data.train_subset=0",
                    *placed,
                ),
            )
            views = len(config.data.views)
            try:
                r = host_rate(config, args.batches)
            except ValueError as e:  # a recipe op with no device version
                rows.append(f"| {name} | {views} | {mode} | – | – | – | – | n/a: {e} |")
                print(rows[-1], flush=True)
                continue
            supply = r["views_per_cpu_s"] * args.host_cores
            step = rates.get((name, mode)) or rates.get((name, "host"))
            demand = step * views if step else None
            verdict = (
                "no device figure"
                if demand is None
                else (
                    f"yes ({supply / demand:.2f}×)"
                    if supply >= demand
                    else f"no ({supply / demand:.2f}×)"
                )
            )
            rows.append(
                f"| {name} | {views} | {mode} | {r['views_per_s']:,.0f} | "
                f"{r['views_per_cpu_s']:,.0f} | {supply:,.0f} | "
                f"{'–' if demand is None else f'{demand:,.0f}'} | {verdict} |"
            )
            print(rows[-1], flush=True)
    print("\n" + "\n".join(rows))


if __name__ == "__main__":
    main()
