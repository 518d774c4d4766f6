"""Which backbone features carry what pretraining learnt: the linear probe of each ResNet stage's
pooled output (and concatenations of them) for a pretraining run's encoder vs the same model at the
run's random init, in one table.

    python experiments/probe_stages.py --workdir=runs/default [--num-train=20000] [--num-test=10000]

Features: `ResNet(stages=True)`'s output (every stage's global average, concatenated) sliced per
stage; the probe: `probe_fit.fit_linear_probe` (multinomial logistic regression by L-BFGS on
standardised features, l2 from `--l2-grid` chosen on a held-out 10% of train), on the first
`--num-train` / `--num-test` images of the run's eval splits. The random init is the run's own
(`train.init_or_restore` without a checkpoint: the probe table's 'random init' row). The default
job's choice of `evals.probe_table.features='stages'` came from this table (docs/experiments/default_job.md,
"Which features").
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ssl_jax import train
from ssl_jax.evaluate.encoder import load_encoder, split_features
from ssl_jax.evaluate.probe_fit import fit_linear_probe
from ssl_jax.evaluate.run_features import features_fn
from ssl_jax.models import resnet


def stage_dims(config) -> list[int]:
    """Widths of the four stages' outputs of `config.model`'s ResNet (what `stages=True` concatenates)."""
    kind, _ = resnet.STAGES[int(config.model.backbone.removeprefix("resnet"))]
    base = resnet.base_width(config.model.width)
    return [base * 2**i * resnet.EXPANSION[kind] for i in range(4)]


def feature_sets(num_stages: int = 4) -> dict[str, list[int]]:
    """Row name → the stages (0-based) whose pooled outputs are concatenated."""
    rows = {f"stage {i + 1}, pooled": [i] for i in range(num_stages)}
    rows["stages 1-4, pooled, concatenated ('stages')"] = list(range(num_stages))
    rows["stages 1-3, pooled"] = [0, 1, 2]
    rows["stages 2-4, pooled"] = [1, 2, 3]
    return rows


def select(features: np.ndarray, dims: list[int], stages: list[int]) -> np.ndarray:
    """The columns of `stages` in the concatenated stage features `[N, sum(dims)]`."""
    edges = np.cumsum([0, *dims])
    return np.concatenate([features[:, edges[s] : edges[s + 1]] for s in stages], axis=1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--workdir", required=True, help="a pretraining run (its latest checkpoint)")
    p.add_argument("--num-train", type=int, default=20_000)
    p.add_argument("--num-test", type=int, default=10_000)
    p.add_argument("--batch-size", type=int, default=500)
    p.add_argument("--l2-grid", default="1e-4,1e-3,1e-2")
    args = p.parse_args()
    encoder = load_encoder(args.workdir)
    config = encoder.config
    exp = train.build_experiment(config)
    state = train.init_or_restore(exp, None)
    random_init = {"params": state.params, "batch_stats": state.batch_stats}
    fn = features_fn(exp, stages=True)  # what the probe table's 'stages' rows use
    dims, grid = stage_dims(config), [float(v) for v in args.l2_grid.split(",")]
    sets = feature_sets()
    results = {}
    for name, variables in (("pretrained", encoder.variables), ("random init", random_init)):
        t0 = time.time()
        common = dict(mesh=encoder.mesh, batch_size=args.batch_size)
        tr = split_features(
            fn, variables, config, config.data.eval_train_split, limit=args.num_train, **common
        )
        te = split_features(
            fn, variables, config, config.data.eval_test_split, limit=args.num_test, **common
        )
        for row, stages in sets.items():
            r = fit_linear_probe(
                select(tr[0], dims, stages), tr[1], select(te[0], dims, stages), te[1], l2_grid=grid
            )
            results[row, name] = 100 * r["top1"]
            print(f"{name:<12} {row:<45} {100 * r['top1']:6.2f}%", flush=True)
        print(f"{name}: {time.time() - t0:.0f} s", flush=True)
    print(
        f"\nLinear probe (logistic regression, l2 from {grid}) of {args.workdir} at step "
        f"{encoder.step}, train {len(tr[1])} / test {len(te[1])} images:\n"
    )
    print("| features | dim | pretrained | random init | margin |\n|---|---|---|---|---|")
    for row, stages in sets.items():
        a, b = results[row, "pretrained"], results[row, "random init"]
        dim = sum(dims[s] for s in stages)
        print(f"| {row} | {dim} | {a:.2f} | {b:.2f} | {a - b:+.2f} |")


if __name__ == "__main__":
    main()
