"""Trains an official implementation from its pinned checkout (`checkouts.py`) on our data at our
budget, and writes the frozen features our probe and kNN score. Runs with the official venv's
python (torch, torchvision; never ssl_jax's requirements):

    python3 -m venv ../official_venv
    ../official_venv/bin/pip install -r experiments/official/requirements-official.txt
    ../official_venv/bin/pip install --no-deps torchvision==0.28.0

    PYTHONPATH=. ../official_venv/bin/python experiments/official/harness.py --method=mocov2 \\
        --numbers="$(cat numbers.json)" --out=DIR [--official-root=../official]

Nothing of ours is installed in that venv: `experiments.official` is found through `PYTHONPATH`,
the repository root, which `runner.run_harness` sets for the runs it starts.

`--numbers` (JSON, written by `experiments/official/runner.py` from our config, so both sides read
one recipe): the images (`fashion_dir`, `train_subset`, `size`, `channels`, `mean`, `std`), the
recipe's ops, the network (`width`, `stem`, `feature_dim`, `hidden`, `out_dim`), the method's
numbers (`queue`, `momentum_ema`, `temperature`; JCL's `num_keys` M' and `lam` λ; SCE's and
ReSSL's `view_ops` (weak, strong), `temperature_m`, `key_bn_splits`, SCE's `coeff`), the
optimiser (`batch`, `steps`, `lr`, `weight_decay`, `momentum`) and the `seed`. The official code runs as its trainer calls it; only
what cannot run on a CPU in one process is replaced (`checkouts.SHIMS`, each with its file:line).

Out: `DIR/features.npz` (`train_x`, `train_y`: all 60,000 training images; `test_x`, `test_y`:
the 10,000 test images; the online network's pooled backbone in eval mode: MoCo's and JCL's
`encoder_q`, the trainer's `encoder` where it names one) and `DIR/run.json` (the
loss every 20 steps, steps, seconds, CPU seconds, versions; JCL's λ of each epoch).

torchvision 0.28.0 as pip finds it for torch 2.13.0+cpu is a CUDA build whose C ops cannot load;
its models and transforms are Python, so the C ops' meta registrations are skipped
(`common.import_torchvision`), as `experiments/peer.py` does. The trainers are `train_moco.py`
(MoCo v2, JCL), `ring.py`, `train_sce.py`, `train_ressl.py`, `train_interclr.py`, `train_cmc.py`
and `train_infomin.py`; what they share is `common.py`'s.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from experiments.official import (
    checkouts,
    common,
    ring,
    train_cmc,
    train_infomin,
    train_interclr,
    train_moco,
    train_ressl,
    train_sce,
)

METHODS = {
    "mocov2": ("moco", train_moco.train_mocov2),
    "jcl": ("jcl", train_moco.train_jcl),
    "ir": ("ring", ring.train),
    "iring": ("ring", ring.train),
    "iring+official": ("ring", ring.train),  # the Ring code's m 0, k 4096, uniform bank init
    "mocoring": ("ring", ring.train),
    "mocoring+ourviews": ("ring", ring.train),  # the views made by our pipeline (StoredViews)
    "scce": ("sce", train_sce.train_scce),
    "ressl": ("ressl", train_ressl.train_ressl),
    "interclr": ("mmselfsup", train_interclr.train_interclr),  # online labels (the config's)
    "interclr+offline": ("mmselfsup", train_interclr.train_interclr),  # re-clustered offline
    "cmc": ("cmc", train_cmc.train_cmc),  # color_fashion_mnist: L and ab, NCE against two banks
    "infomin": ("pycontrast", train_infomin.train_infomin),  # aug D + jigsaw, RGBMoCo
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--method", choices=sorted(METHODS), required=True)
    parser.add_argument("--numbers", required=True, help="the recipe as JSON (runner.py)")
    parser.add_argument("--out", required=True, help="folder for features.npz and run.json")
    parser.add_argument("--official-root", default="", help="where the checkouts are")
    parser.add_argument(
        "--threads",
        type=int,
        default=int(os.environ.get("SSL_JAX_OFFICIAL_THREADS", 0)) or os.cpu_count(),
        help="torch's intra-op threads ($SSL_JAX_OFFICIAL_THREADS, else every core): 1 beside "
        "other busy processes, where 2 threads spin-wait (JCL: 4.5 against 0.14 s a step)",
    )
    args = parser.parse_args(argv)
    import torch

    common.import_torchvision()  # before the official modules import it
    torch.set_num_threads(args.threads)
    checkout, train = METHODS[args.method]
    path = checkouts.check(checkout, args.official_root)
    numbers = json.loads(args.numbers)
    os.makedirs(args.out, exist_ok=True)
    t0, cpu0 = time.time(), common.cpu_seconds()
    model, curve, extra = train(path, numbers)
    pretrain_s, pretrain_cpu_s = time.time() - t0, common.cpu_seconds() - cpu0
    encoder = extra.pop("encoder") if "encoder" in extra else model.encoder_q
    embed = extra.pop("embed", None)
    train_x, train_y = common.features(encoder, numbers, "train", embed=embed)
    test_x, test_y = common.features(encoder, numbers, "test", embed=embed)
    tmp = os.path.join(args.out, "features.tmp.npz")
    np.savez(tmp, train_x=train_x, train_y=train_y, test_x=test_x, test_y=test_y)
    os.replace(tmp, os.path.join(args.out, "features.npz"))
    import torchvision

    run = dict(
        loss_curve=curve,
        steps=numbers["steps"],
        pretrain_s=round(pretrain_s, 1),
        pretrain_cpu_s=round(pretrain_cpu_s, 1),
        versions=f"torch {torch.__version__}, torchvision {torchvision.__version__}",
        **extra,
    )
    with open(os.path.join(args.out, "run.json"), "w") as f:
        json.dump(run, f, indent=1)
    print(f"official {args.method}: {numbers['steps']} steps in {pretrain_s:.0f} s", flush=True)


if __name__ == "__main__":
    main()
