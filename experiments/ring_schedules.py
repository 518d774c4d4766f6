"""Plot Ring's outer-fraction schedules (`sampling.ring_outer_schedule`) against the global step.

    python experiments/ring_schedules.py [--steps_per_epoch=195] [--epochs=200] [--out=docs/ring_schedules.png]

The code's CIFAR numbers by default (50,000 images / 256 = 195 steps per epoch, 200 epochs,
`max_anneal_epoch` 100): 'constant' (every released config: 0.1), 'linear' (the paper), 'step' and
'exponential' (per step: at 0.1 within ~60 steps, hence the inset on the first 100 steps). The
inner fraction is constant, so the ring's percentile band (`ring_percentiles` in
tests/methods/references.py) is [100(1 − outer), 100(1 − 0.1·outer)]. 'adaptive_loss' depends on
the losses and is not drawn.
"""

from __future__ import annotations

import argparse

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ssl_jax.methods.negatives import sampling  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps_per_epoch", type=int, default=195)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--max_anneal_epochs", type=float, default=100.0)
    parser.add_argument("--out", default="docs/ring_schedules.png")
    args = parser.parse_args()
    total = args.steps_per_epoch * args.epochs
    n = int(args.max_anneal_epochs * args.steps_per_epoch)
    steps = np.arange(total)
    fig, (ax, inset) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [3, 1]})
    for anneal in ("constant", "linear", "step", "exponential"):
        values = np.asarray(
            sampling.ring_outer_schedule(anneal, steps, outer=0.1, anneal_steps=n)
            if anneal != "constant"
            else np.full(total, 0.1)
        )
        ax.plot(steps / args.steps_per_epoch, values, label=anneal)
        inset.plot(steps[:100], values[:100], label=anneal)
    ax.set(
        xlabel="epoch",
        ylabel="outer fraction (thres_outer)",
        title="Ring: outer-fraction schedules",
    )
    inset.set(xlabel="step", title="first 100 steps")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(
        f"wrote {args.out}: linear reaches 0.1 at step {n - 1} (epoch {args.max_anneal_epochs:g})"
    )


if __name__ == "__main__":
    main()
