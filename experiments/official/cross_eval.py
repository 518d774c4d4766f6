"""One of our trained encoders read by both sides' feature paths: is the evaluation the same?

    python experiments/official/cross_eval.py \
        --cell=cpu_long_variants.fashion_mnist.mocoring+keybn64+epochlr.s0

An official cell's features come from `common.features` (torch, the torchvision-named ResNet in
eval mode); ours from `run_features.extract_features` (JAX, our eval input). Both are scored by
the same probe and kNN. This takes a finished cell of ours (its config as it trained, its last
checkpoint), exports its backbone through `export.torchvision_state_dict` into the harness's
`torchvision_resnet` and reads every train and test image both ways: the largest feature
difference, then the probe and kNN of each. Equal scores mean that a probe gap between an official
cell and ours is the training's, not the evaluation's.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from experiments import campaign_cells, campaign_runner, grids
from experiments.official import common, runner

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cell", required=True, help="GRID.SECTION.METHOD.sSEED of ours")
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    config, workdir, cell = campaign_cells.trained_cell(args.cell)
    method = grids.method_key(cell.method)

    import torch

    from ssl_jax import export
    from ssl_jax.evaluate import run_features
    from ssl_jax.evaluate.encoder import load_encoder
    from ssl_jax.evaluate.evaluators import probe_and_knn, probe_args

    exp, state = campaign_runner.finished_state(config, workdir)
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    numbers = runner.numbers(config, method)
    model = common.torchvision_resnet(
        numbers["width"], numbers["stem"], numbers["channels"], num_classes=10
    )
    sd = export.torchvision_state_dict(load_encoder(workdir))
    missing, unexpected = model.load_state_dict(
        {k: torch.from_numpy(np.array(v)) for k, v in sd.items()}, strict=False
    )
    if unexpected or set(missing) != {"fc.weight", "fc.bias"}:
        raise SystemExit(f"error: the export does not fit: {missing} {unexpected}")
    pt, k = config.evals.probe_table, config.evals.knn
    result = {"cell": args.cell, "step": int(state.step)}
    feats = {}
    for split, name in (
        ("train", config.data.eval_train_split),
        ("test", config.data.eval_test_split),
    ):
        ours = run_features.extract_features(exp, variables, name, batch_size=k.batch_size)
        theirs = common.features(model, numbers, split)
        if not np.array_equal(ours[1], theirs[1]):
            raise SystemExit(f"error: the two paths read {split} in another order")
        diff = np.abs(ours[0] - theirs[0]).max() / np.abs(ours[0]).max()
        result[f"{split}_max_rel_diff"] = float(diff)
        print(f"{split}: {len(ours[0])} images, largest difference {diff:.2e} of the largest value")
        feats[split] = ours, theirs
    for side, i in (("ours", 0), ("official_path", 1)):
        scores = probe_and_knn(
            feats["train"][i],
            feats["test"][i],
            **probe_args(pt),
            knn_k=pt.knn_k,
            knn_temperature=pt.knn_temperature,
        )
        result[side] = {"probe": scores["top1"], "knn": scores.get("knn_top1")}
        print(f"{side}: probe {100 * scores['top1']:.2f}, kNN {100 * scores['knn_top1']:.2f}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
