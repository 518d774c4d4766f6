"""Our side of an official cell (`campaign_runner.run_cell` calls `run_cell` for a grid with
`official=True`): the cell's config (the grid's budget, the method's config) as the harness's
numbers, the harness run with the official venv's python (`run_harness`), and its features scored
by the same probe and kNN as our cells (`evaluators.probe_and_knn` with the config's
`evals.probe_table`).

The official venv's python: `--official-python` of `campaign.py`, `$SSL_JAX_OFFICIAL_PYTHON`, or
`../official_venv/bin/python` beside the checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

from experiments.child_env import checkout_env
from experiments.official import checkouts, common, harness, ring

DEFAULT_PYTHON = os.path.join(os.path.dirname(checkouts.ROOT), "official_venv", "bin", "python")
HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness.py")


def official_python() -> str:
    python = os.environ.get("SSL_JAX_OFFICIAL_PYTHON", "") or DEFAULT_PYTHON
    if not os.path.exists(python):
        raise SystemExit(
            f"error: no official venv python at {python}; make it as "
            "experiments/official/harness.py's docstring says, or set $SSL_JAX_OFFICIAL_PYTHON"
        )
    return python


def run_harness(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """`harness.py args` in the official venv, with the repository root ahead on `PYTHONPATH`
    (nothing of ours is installed there); `kwargs` go to `subprocess.run`."""
    return subprocess.run([official_python(), HARNESS, *args], env=checkout_env(), **kwargs)


# Methods whose official trainer takes view 0 (weak) to the momentum branch and view 1 (strong)
# to the online one, each view with its own recipe (SCE's `sym: False`, ReSSL).
WEAK_STRONG = ("scce", "ressl")


def weak_strong_numbers(config, method: str) -> dict:
    """SCE's and ReSSL's own numbers: each view's recipe, τ_m, SCE's λ (`coeff`), the momentum
    trunk's BN groups; refused where the official path has no such setting."""
    mc, views = config.method_config, tuple(config.data.views)
    if len(views) != 2 or mc.symmetric:
        raise SystemExit(f"error: official {method} runs 2 views, asymmetric (weak → target)")
    if method == "ressl" and mc.temperature != 0.1:
        raise SystemExit(f"error: official ressl's τ is 0.1 (ressl.py:68), not {mc.temperature}")
    splits = config.global_batch_size // mc.key_bn_group_size if mc.shuffle_bn else 1
    extra = dict(
        view_ops=[[dict(op) for op in config.data.recipes[view]] for view in views],
        temperature_m=float(mc.temperature_m),
        key_bn_splits=int(splits),
    )
    if method == "scce":
        extra["coeff"] = float(mc.coeff)
    return extra


# InterCLR's label modes as cells: the hook's and the model's `online_labels` (True in the
# official config; False re-clusters every `interval` epochs, interclr_hook.py:385-387).
INTERCLR_LABELS = {"interclr": "online", "interclr+offline": "offline"}


def interclr_numbers(config, method: str) -> dict:
    """InterCLR's inter branch and clustering numbers from our config; refused where the official
    code has no such setting (one head τ for both branches, k-means of 20 iterations, a bank row
    per training image)."""
    from ssl_jax.config_checks import hparams_from_config
    from ssl_jax.methods import interclr

    hp = hparams_from_config(interclr.Hparams, config)
    if hp.labels != INTERCLR_LABELS[method]:
        raise SystemExit(
            f"error: official {method} has {INTERCLR_LABELS[method]} labels, not {hp.labels}"
        )
    if hp.inter_temperature != hp.temperature:
        raise SystemExit(
            "error: official interclr has one head τ for both branches (interclr-moco.py:19)"
        )
    if hp.kmeans_iters != 20:
        raise SystemExit("error: official interclr's k-means runs 20 iterations (clustering.py:98)")
    if hp.bank_size != (config.data.train_subset or 60_000):
        raise SystemExit(f"error: the bank has {hp.bank_size} rows, the training set other")
    if hp.queue_size % config.global_batch_size:
        raise SystemExit("error: official interclr needs the queue a multiple of the batch (:172)")
    return dict(
        bank_momentum=float(hp.bank_momentum),
        num_clusters=int(hp.num_clusters),
        min_cluster=int(hp.min_cluster_size),
        online_labels=hp.labels == "online",
        num_negatives=int(hp.num_negatives),
        sampler=hp.sampler,
        pool_size=int(hp.pool_size),
        margin=float(hp.margin),
        intra_weight=float(hp.intra_weight),
        inter_weight=float(hp.inter_weight),
        centroid_every_steps=int(hp.centroid_every_steps),
        interval=int(hp.offline_every_epochs),
    )


def cmc_numbers(config) -> dict:
    """CMC's bank, loss, crop and step schedule from our config; refused where `train_CMC.py` has
    no such setting (Lab views, the step schedule per epoch, a bank row per training image)."""
    mc, optim = config.method_config, config.optim
    ops = [dict(op) for op in config.data.recipes[config.data.views[0]]]
    kinds = [op["op"] for op in ops]
    if kinds != ["random_resized_crop", "horizontal_flip", "color_space"] or (
        ops[2]["space"] != "lab" or ops[1].get("p", 0.5) != 0.5
    ):
        raise SystemExit(
            f"error: official cmc's views are RRC, flip, RGB2Lab (train_CMC.py:140-146), not {ops}"
        )
    if optim.schedule != "step" or optim.schedule_unit != "epoch":
        raise SystemExit(
            "error: official cmc steps its lr down per epoch (util.py:7-13): set "
            "optim.schedule=step optim.schedule_unit=epoch optim.decay_epochs=(...)"
        )
    if mc.bank_size != (config.data.train_subset or 60_000):
        raise SystemExit(f"error: the bank has {mc.bank_size} rows, the training set other")
    if mc.get("query_bn_group_size", 0):
        raise SystemExit("error: official cmc computes BN over the whole batch (one process)")
    return dict(
        num_negatives=int(mc.num_negatives),
        bank_momentum=float(mc.bank_momentum),
        cmc_loss=mc.loss,
        crop_low=float(ops[0]["scale"][0]),
        decay_epochs=[int(e) for e in optim.decay_epochs],
        decay_factor=float(optim.decay_factor),
    )


# The colour data sets the official cells read: as our source generates them (runner writes the
# arrays, `write_images`); a view composited anew per read (`views=item`) has no official form.
COLOUR_DATA = "color_fashion_mnist"


def numbers(config, method: str) -> dict:
    """The harness's numbers from one of our configs (what both sides train with)."""
    from ssl_jax.data.sources import color_fashion_mnist, fashion_mnist
    from ssl_jax.models import feature_dim

    data, model, optim, mc = config.data, config.model, config.optim, config.method_config
    if data.name not in ("fashion_mnist", COLOUR_DATA):
        raise SystemExit(
            f"error: official cells read Fashion-MNIST or {COLOUR_DATA}, not {data.name}"
        )
    if data.name == COLOUR_DATA and color_fashion_mnist.item_views(data):
        raise SystemExit(f"error: official cells read {COLOUR_DATA} as generated, not item views")
    views = tuple(data.views)
    if len(set(views)) != 1 and method not in (*WEAK_STRONG, "infomin"):  # infomin: its own
        raise SystemExit(f"error: official {method} makes every view with one transform: {views}")
    if optim.lr_scaling != "none" or optim.name != "sgd" or optim.warmup_epochs:
        raise SystemExit("error: official cells take SGD at base_lr, no scaling, no warm-up")
    extra = {}
    if method == "jcl":  # M' keys (`--k_crops` M' + 1) and λ, ramped as the official `train` does
        if mc.lam_schedule != "linear_epoch":
            raise SystemExit(
                f"error: official jcl ramps λ per epoch (main_moco.py:342), not {mc.lam_schedule!r}"
            )
        if len(views) != mc.num_keys + 1:
            raise SystemExit(f"error: jcl with {mc.num_keys} keys needs {mc.num_keys + 1} views")
        extra = dict(num_keys=int(mc.num_keys), lam=float(mc.lam))
    elif method in ring.RING_METHODS:  # the code's system, loss, k, m, bank init and ring
        extra = ring.config_numbers(config, method)
    elif method in WEAK_STRONG:
        extra = weak_strong_numbers(config, method)
    elif method in INTERCLR_LABELS:
        extra = interclr_numbers(config, method)
    elif method == "cmc":
        extra = cmc_numbers(config)
    elif method == "infomin":
        from experiments.official import train_infomin

        extra = train_infomin.infomin_numbers(config, method)
    return dict(
        method=method,
        fashion_dir=data.data_dir or fashion_mnist.FASHION_MNIST_DIR,
        dataset=data.name,
        train_subset=int(data.train_subset),
        size=int(data.image_size),
        channels=int(data.channels),
        mean=[float(v) for v in data.mean],
        std=[float(v) for v in data.std],
        ops=[dict(op) for op in data.recipes[views[0]]],
        width=float(model.width),
        stem=model.stem,
        feature_dim=feature_dim(18, model.width),
        hidden=int(model.projector.hidden_dims[0]) if model.projector.hidden_dims else 0,
        out_dim=int(model.projector.out_dim),
        queue=int(mc.get("queue_size", 0)),
        temperature=float(mc.temperature),
        momentum_ema=float(config.ema.base),
        batch=int(config.global_batch_size),
        steps=int(config.total_steps),
        lr=float(optim.base_lr),
        weight_decay=float(optim.weight_decay),
        momentum=float(optim.momentum),
        seed=int(config.seed),
        **extra,
    )


# Cells whose official trainer reads views our host pipeline made (`write_our_views`) in the place
# of torchvision's transform classes: does the probe follow the augmentations' implementation?
OUR_VIEWS = "+ourviews"


def write_our_views(numbers: dict, path: str, reads: int) -> None:
    """`reads` views of each training image by our host pipeline's ops (`augment.apply_ops_uint8`
    on the recipe `numbers["ops"]`, uniforms seeded by the cell's seed and the read), saved as
    `[reads, N, H, W]` uint8 `.npy` at `path`: what a `+ourviews` cell's trainer reads."""
    import tensorflow as tf

    from ssl_jax.data.host import augment
    from ssl_jax.data.recipe_ops import num_draws

    images, _ = common.read_subset(numbers)
    recipe, x = numbers["ops"], tf.constant(images[..., None])
    tmp = path + ".tmp.npy"
    out = np.lib.format.open_memmap(tmp, "w+", np.uint8, (reads, *images.shape))
    for r in range(reads):
        u = tf.random.stateless_uniform([len(images), num_draws(recipe)], [numbers["seed"], r])
        out[r] = augment.apply_ops_uint8(x, recipe, u).numpy()[..., 0]
        if (r + 1) % 10 == 0 or r + 1 == reads:
            print(f"our views: {r + 1} of {reads} per image", flush=True)
    out.flush()
    del out
    os.replace(tmp, path)


def write_images(config, path: str) -> None:
    """Our data set's train and test splits as the .npz `common.read_split` reads
    (`train_x`, `train_y`, `test_x`, `test_y`; uint8 `[N, H, W, 3]`): the images our cells
    train and are scored on (color_fashion_mnist as generated, `datasets.load_arrays`)."""
    from ssl_jax.data import datasets

    out = {}
    for split in ("train", "test"):
        out[f"{split}_x"], out[f"{split}_y"] = datasets.load_arrays(config.data, split)
    tmp = path + ".tmp.npz"
    np.savez(tmp, **out)
    os.replace(tmp, path)


def reads_per_image(numbers: dict) -> int:
    """How often the Ring trainer reads each image over the run: two views an epoch (MoCoRing's
    `CIFAR10TwoViews`), over the epochs the step count starts (drop_last)."""
    per_epoch = (numbers["train_subset"] or 60_000) // numbers["batch"]
    return 2 * -(-numbers["steps"] // per_epoch)


def harness_numbers(config, method: str, workdir: str) -> dict:
    """`numbers` plus the files they name, written in `workdir`: a colour data set's images
    (`images_file`), a `+ourviews` cell's views (`views_file`)."""
    nums = numbers(config, method)
    if nums["dataset"] == COLOUR_DATA:
        nums["images_file"] = os.path.join(workdir, "images.npz")
        write_images(config, nums["images_file"])
    if method.endswith(OUR_VIEWS):
        nums["views_file"] = os.path.join(workdir, "our_views.npy")
        if not os.path.exists(nums["views_file"]):
            write_our_views(nums, nums["views_file"], reads_per_image(nums))
    return nums


def run_cell(config, method: str, workdir: str, official_root: str = "") -> dict:
    """Trains the official `method` on `config`'s recipe in `workdir` (a finished run's features
    are reused), scores its features; returns the record's official fields and scores."""

    from ssl_jax.evaluate.evaluators import probe_and_knn, probe_args

    checkout = checkouts.CHECKOUTS[harness.METHODS[method][0]]
    done = os.path.join(workdir, "features.npz")
    if not os.path.exists(done):
        nums = harness_numbers(config, method, workdir)
        args = [
            f"--method={method}",
            f"--numbers={json.dumps(nums)}",
            f"--out={workdir}",
            f"--official-root={official_root}",
        ]
        result = run_harness(args, stdout=sys.stdout, stderr=sys.stderr)
        if result.returncode:
            raise SystemExit(f"error: the official {method} run failed (exit {result.returncode})")
        for file in (nums.get("views_file"), nums.get("images_file")):
            if file and os.path.exists(file):
                os.remove(file)  # the images (and their views): not kept once the features are
    with np.load(done) as f:
        train, test = (f["train_x"], f["train_y"]), (f["test_x"], f["test_y"])
    with open(os.path.join(workdir, "run.json")) as f:
        run = json.load(f)
    pt = config.evals.probe_table
    scores = probe_and_knn(
        train, test, **probe_args(pt), knn_k=pt.knn_k, knn_temperature=pt.knn_temperature
    )
    return dict(
        official_repo=checkout.repo,
        official_commit=checkout.commit,
        shim_hash=checkouts.shim_hash(checkout.name),
        official_versions=run["versions"],
        pretrain_s=run["pretrain_s"],
        pretrain_cpu_s=run["pretrain_cpu_s"],
        steps=run["steps"],
        loss_curve=run["loss_curve"],
        **({"lambda_per_epoch": run["lambda_per_epoch"]} if "lambda_per_epoch" in run else {}),
        feature_dim=int(train[0].shape[1]),
        probe=scores["top1"],
        knn=scores.get("knn_top1"),
    )
