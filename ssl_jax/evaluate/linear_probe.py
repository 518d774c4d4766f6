"""The linear_probe job: a linear probe of a frozen backbone, by the fast or the SGD protocols.

- Protocol 'fast' (small data): `probe_fit.fit_linear_probe` on features gathered on the host.
- `run(config, workdir)`: the job (`configs/linear_probe.py`). Protocol 'sgd' trains
  a linear head with a jitted, sharded loop either over augmented images (`probe.input='images'`:
  crop + flip on the host, one frozen forward per step, as MoCo's `main_lincls.py`) or over cached
  eval-view features kept sharded on the devices (`probe.input='features'`). The test split is
  cached as sharded features once (the backbone is frozen), padded and masked so every test image
  counts exactly once on any number of devices and hosts. Logs `probe/top1`, `probe/top5`,
  `probe/train_loss`, `probe/lr` to metrics.jsonl and TensorBoard; saves the head
  (`probe_head.npz`: `kernel [D, C]`, `bias [C]` applied to the raw backbone features).
  `probe.features` picks what is probed ('pooled': the last stage, the papers' protocol; 'stages':
  every stage's pool, concatenated, as the default job's probe table); the first and last lines and
  `probe_result.json` name it (`encoder.describe_features`).
"""

from __future__ import annotations

import functools
import math
import os
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from ssl_jax import optim
from ssl_jax.data import pipeline, train_split
from ssl_jax.data.device.eval_input import eval_input
from ssl_jax.evaluate import jobs
from ssl_jax.evaluate.encoder import _replicated_scalar, sharded_split_features
from ssl_jax.evaluate.probe_fit import fit_linear_probe
from ssl_jax.models import compute_dtype
from ssl_jax.parallel import sharding
from ssl_jax.parallel.sharding import DATA_AXIS

HEAD_FILE = "probe_head.npz"
RESULT_FILE = "probe_result.json"
CONFIG_FILE = "probe_config.json"


def init_head(rng: jax.Array, dim: int, num_classes: int, std: float) -> dict:
    """`{'kernel': N(0, std²) [D, C], 'bias': 0 [C]}` (MoCo's `fc` init: std 0.01, bias 0)."""
    return {
        "kernel": std * jax.random.normal(rng, (dim, num_classes), jnp.float32),
        "bias": jnp.zeros((num_classes,), jnp.float32),
    }


def _logits(head, f):
    return f.astype(jnp.float32) @ head["kernel"] + head["bias"]


def _correct(logits, y, mask):
    """Correct top-1 and top-5 counts over the rows where `mask`."""
    _, pred = jax.lax.top_k(logits, min(5, logits.shape[-1]))
    top1 = (pred[:, 0] == y) & mask
    top5 = jnp.any(pred == y[:, None], axis=1) & mask
    return jnp.stack([jnp.sum(top1), jnp.sum(top5)]).astype(jnp.int32)


@jax.jit
def _cached_counts(head, feats, labels, mask):
    """Counts over cached sharded features `[nb, G, D]` (padding masked out)."""
    logits = jnp.einsum("bgd,dc->bgc", feats, head["kernel"]) + head["bias"]
    logits = logits.reshape(-1, logits.shape[-1])
    return _correct(logits, labels.reshape(-1), mask.reshape(-1))


def evaluate_cached(head: dict, test) -> dict[str, float]:
    """top-1 / top-5 of `head` on cached test features (`encoder.ShardedFeatures`); `count` is the
    number of test images counted (each exactly once)."""
    counts = _replicated_scalar(_cached_counts(head, test.features, test.labels, test.mask))
    n = test.num_valid
    return {"top1": counts[0] / n, "top5": counts[1] / n, "count": n}


def _gather_rows(feats, bi, gi, mesh):
    """Rows `feats[bi, gi]` of features sharded `P(None, 'data', None)`, replicated `[B, D]`:
    each device contributes the rows it owns and one psum assembles them (the cache is never
    gathered)."""

    def local(f, bi, gi):
        g_local = f.shape[1]
        start = jax.lax.axis_index(DATA_AXIS) * g_local
        mine = (gi >= start) & (gi < start + g_local)
        rows = f[bi, jnp.clip(gi - start, 0, g_local - 1)]
        return jax.lax.psum(jnp.where(mine[:, None], rows, 0.0), DATA_AXIS)

    return jax.shard_map(
        local, mesh=mesh, in_specs=(P(None, DATA_AXIS, None), P(), P()), out_specs=P()
    )(feats, bi, gi)


def _ce(head, f, y):
    return optax.softmax_cross_entropy_with_integer_labels(_logits(head, f), y).mean()


def _update(tx, head, opt_state, f, y):
    loss, grads = jax.value_and_grad(_ce)(head, f, y)
    updates, opt_state = tx.update(grads, opt_state, head)
    return optax.apply_updates(head, updates), opt_state, loss


def _probe_data_config(config, probe) -> ml_collections.ConfigDict:
    """The pretraining config turned into the probe's training input: labelled train split, one
    view made by RandomResizedCrop(image_size, crop_scale) (+ flip), batch `probe.batch_size`;
    color_fashion_mnist's generated images (`views='shared'`), whatever the pretraining's views."""
    pc = ml_collections.ConfigDict(config.to_dict())
    size = int(pc.data.image_size)
    recipe = [
        {
            "op": "random_resized_crop",
            "size": size,
            "scale": tuple(probe.crop_scale),
            "ratio": (3 / 4, 4 / 3),
        }
    ]
    if probe.flip:
        recipe.append({"op": "horizontal_flip", "p": 0.5})
    pc.data.train_split = pc.data.eval_train_split
    pc.data.train_subset = max(0, int(probe.num_train))
    pc.data.views = ("probe",)
    pc.data.recipes = ml_collections.ConfigDict({"probe": tuple(recipe)})
    pc.data.device_ops = False
    pc.data.device_crops = 0
    if pc.data.get("color_fashion_mnist") is not None:
        pc.data.color_fashion_mnist.views = "shared"
    pc.global_batch_size = int(probe.batch_size)
    return pc


class _Trainer:
    """Head, optimiser and step count of the SGD protocols (replicated over the mesh); the epoch
    generators below advance it."""

    def __init__(self, inputs, probe, mesh, num_train: int):
        self.spe = max(1, num_train // int(probe.batch_size))
        self.total = max(1, int(round(float(probe.num_epochs) * self.spe)))
        self.tx, self.lr = optim.make_optimizer(
            probe.optim,
            total_steps=self.total,
            steps_per_epoch=self.spe,
            global_batch_size=int(probe.batch_size),
        )
        rep = NamedSharding(mesh, P())
        head = init_head(
            jax.random.PRNGKey(int(inputs.config.seed)),
            inputs.feature_dim,
            inputs.num_classes,
            float(probe.head_init_std),
        )
        self.head = jax.device_put(head, rep)
        self.opt_state = jax.jit(self.tx.init, out_shardings=rep)(self.head)
        self.step = 0


def _images_epochs(trainer: _Trainer, inputs, probe, mesh):
    """Yields after each epoch of SGD over augmented images (frozen eval-mode backbone)."""
    encoder, config = inputs.encoder, inputs.config
    pc = _probe_data_config(config, probe)
    # the pretraining run's model input (mean/std or colour space), not the probe data's
    run_data = config.data
    dtype = compute_dtype(config.model.dtype)
    tx, stages = trainer.tx, inputs.stages
    rep, batch = NamedSharding(mesh, P()), sharding.batch_sharding(mesh)

    @functools.partial(
        jax.jit,
        donate_argnums=(0, 1),
        out_shardings=(rep, rep, rep),
        in_shardings=(rep, rep, rep, batch, batch),
    )
    def step(head, opt_state, variables, images, y):
        x = eval_input(images, run_data, dtype)
        f = jax.lax.stop_gradient(encoder.apply(variables, x, stages=stages))
        return _update(tx, head, opt_state, f, y)

    data = pipeline.train_iterator(
        pc, process_index=jax.process_index(), process_count=jax.process_count()
    )
    while trainer.step < trainer.total:
        losses = []
        for _ in range(min(trainer.spe, trainer.total - trainer.step)):
            b = sharding.host_to_global(next(data), mesh)
            trainer.head, trainer.opt_state, loss = step(
                trainer.head, trainer.opt_state, encoder.variables, b["views"][0], b["label"]
            )
            losses.append(loss)
            trainer.step += 1
        yield float(np.mean(jax.device_get(losses)))


def _feature_epochs(trainer: _Trainer, train, probe, mesh, seed: int):
    """Yields after each epoch of SGD over cached sharded features (a jitted scan per epoch)."""
    tx = trainer.tx
    g = train.features.shape[1]
    mask = np.asarray(multihost_utils.process_allgather(train.mask, tiled=True)).reshape(-1)
    labels = np.asarray(multihost_utils.process_allgather(train.labels, tiled=True)).reshape(-1)
    valid = np.flatnonzero(mask)
    b = int(probe.batch_size)
    rep = NamedSharding(mesh, P())

    @functools.partial(jax.jit, donate_argnums=(0, 1), out_shardings=(rep, rep, rep))
    def epoch(head, opt_state, feats, bi, gi, y):
        def one(carry, xs):
            head, opt_state = carry
            f = _gather_rows(feats, xs[0], xs[1], mesh)
            head, opt_state, loss = _update(tx, head, opt_state, f, xs[2])
            return (head, opt_state), loss

        (head, opt_state), losses = jax.lax.scan(one, (head, opt_state), (bi, gi, y))
        return head, opt_state, jnp.mean(losses)

    rng = np.random.default_rng(seed)
    while trainer.step < trainer.total:
        steps = min(trainer.spe, trainer.total - trainer.step)
        order = rng.permutation(valid)[: steps * b].reshape(steps, b)
        idx = [jax.device_put(a.astype(np.int32), rep) for a in (order // g, order % g)]
        y = jax.device_put(labels[order].astype(np.int32), rep)
        trainer.head, trainer.opt_state, loss = epoch(
            trainer.head, trainer.opt_state, train.features, *idx, y
        )
        trainer.step += steps
        yield float(loss)


def _cache(inputs, probe, key: str, limit: int, *, mesh):
    """The first `limit` features (all: -1) of split `config.data.<key>`, cached sharded on the
    devices in batches of `probe.eval_batch_size` (a progress phase)."""
    with inputs.embedding(key, limit):
        return sharded_split_features(
            inputs.feature_fn(),
            inputs.encoder.variables,
            inputs.config,
            inputs.config.data[key],
            mesh=mesh,
            batch_size=int(probe.eval_batch_size),
            limit=limit,
            feature_dim=inputs.feature_dim,
        )


# An epoch's mean cross-entropy above this many times chance level (ln C) means the head diverges.
DIVERGED_FACTOR = 3.0


def divergence_warning(loss: float, num_classes: int, lr: float, preset: str) -> str | None:
    """The line a probe job prints when its training loss has left chance level far behind
    upwards (or is not finite): the head diverges, and what to change; None otherwise."""
    chance = math.log(num_classes)
    if math.isfinite(loss) and loss <= DIVERGED_FACTOR * chance:
        return None
    return (
        f"warning: the probe's loss {loss:.1f} is above {DIVERGED_FACTOR:g} × chance level "
        f"(ln {num_classes} = {chance:.2f}): the head diverges at lr {lr:g}"
        + (
            " (preset 'moco' is MoCo's ImageNet ResNet-50 protocol, lr 30)"
            if preset == "moco"
            else ""
        )
        + "; for a small encoder or data set use the ':fast' preset, or a smaller "
        "--config.probe.optim.base_lr"
    )


def run_sgd(inputs, probe, *, mesh, writer=None, log=print) -> dict:
    """Protocol 'sgd'. Returns `{'top1', 'top5', 'count', 'kernel', 'bias', 'steps'}`."""
    config = inputs.config
    test = _cache(inputs, probe, "eval_test_split", int(probe.num_test), mesh=mesh)
    if probe.input == "features":
        train = _cache(inputs, probe, "eval_train_split", int(probe.num_train), mesh=mesh)
        trainer = _Trainer(inputs, probe, mesh, train.num_valid)
        epochs = _feature_epochs(trainer, train, probe, mesh, int(config.seed))
    else:
        pc = _probe_data_config(config, probe)
        trainer = _Trainer(
            inputs, probe, mesh, train_split.steps_per_epoch(pc) * pc.global_batch_size
        )
        epochs = _images_epochs(trainer, inputs, probe, mesh)
    num_epochs = math.ceil(trainer.total / trainer.spe)
    every = max(1, int(probe.eval_every_epochs))
    result, warned = {}, False
    t0 = time.time()
    num_classes = int(trainer.head["kernel"].shape[-1])
    for epoch, loss in enumerate(epochs, start=1):
        lr = float(trainer.lr(trainer.step - 1))
        warning = divergence_warning(float(loss), num_classes, lr, probe.get("preset", ""))
        if warning and not warned:
            log(warning)
            warned = True
        scalars = {"probe/train_loss": loss, "probe/lr": lr}
        line = f"probe epoch {epoch}/{num_epochs} | loss {loss:.4f} | lr {lr:.4g}"
        if epoch % every == 0 or epoch == num_epochs:
            result = evaluate_cached(trainer.head, test)
            scalars.update({"probe/top1": result["top1"], "probe/top5": result["top5"]})
            line += f" | top-1 {100 * result['top1']:.2f}% top-5 {100 * result['top5']:.2f}%"
        if writer is not None:
            writer.write_scalars(trainer.step, scalars)
        log(f"{line} | {time.time() - t0:.1f}s")
    head = jax.device_get(trainer.head)
    return {
        **result,
        "diverged": warned,
        "kernel": np.asarray(head["kernel"]),
        "bias": np.asarray(head["bias"]),
        "steps": trainer.step,
    }


def run_fast(inputs, probe, *, mesh) -> dict:
    """Protocol 'fast': `fit_linear_probe` on features gathered on the host (small data)."""
    enc, config = inputs.encoder, inputs.config
    kw = dict(data_config=config.data, batch_size=int(probe.eval_batch_size), stages=inputs.stages)
    with inputs.embedding("eval_train_split", int(probe.num_train)):
        train_x, train_y = enc.split_features(
            config.data.eval_train_split, limit=int(probe.num_train), **kw
        )
    with inputs.embedding("eval_test_split", int(probe.num_test)):
        test_x, test_y = enc.split_features(
            config.data.eval_test_split, limit=int(probe.num_test), **kw
        )
    r = fit_linear_probe(
        train_x,
        train_y,
        test_x,
        test_y,
        l2_grid=tuple(probe.l2_grid),
        iterations=int(probe.iterations),
        seed=int(config.seed),
        return_head=True,
        solver=probe.solver,
        progress_lines=True,
    )
    return {**r, "count": len(test_y), "steps": 0}


def resolve_preset(
    config: ml_collections.ConfigDict, data_name: str, *, num_devices: int, log=print
) -> ml_collections.ConfigDict:
    """The default preset, 'auto' (`configs/linear_probe.py`), made concrete for the data the
    encoder is probed on: `config.probe_small_data` (the 'fast' preset) for one of
    `config.small_data`, else `config.probe` (MoCo's ImageNet protocol); said in one line. A named
    preset is returned as it is."""
    if config.probe.preset != "auto":
        return config
    config = config.copy_and_resolve_references()
    small = data_name in config.small_data
    if small:
        config.probe = config.probe_small_data
    config.probe.preset = "fast" if small else "moco"
    jobs.validate_eval_job(config, num_devices=num_devices)
    log(
        f"preset: '{config.probe.preset}' (the default for {data_name}: "
        + ("cached features, L-BFGS logistic regression" if small else "MoCo's SGD protocol")
        + "; name one to choose, e.g. configs/linear_probe.py:"
        + ("moco" if small else "fast")
        + ")"
    )
    return config


def run(config: ml_collections.ConfigDict, workdir: str, *, mesh=None, validated=None) -> dict:
    """The linear_probe job: every check first (run, architecture, labels), then the probe; writes
    metrics.jsonl / TensorBoard, `probe_head.npz`, `probe_result.json` and `probe_config.json` in
    `workdir`. Returns the result record. `validated`: `validation.validate`'s result (`main`'s),
    None to validate here (`jobs.prepare`)."""
    mesh = sharding.make_mesh() if mesh is None else mesh
    inputs = jobs.prepare(config, mesh, validated=validated)
    log = lambda line: print(line, flush=True) if jax.process_index() == 0 else None
    config = resolve_preset(config, inputs.config.data.name, num_devices=mesh.size, log=log)
    probe, enc = config.probe, inputs.encoder
    log(
        f"linear probe ({probe.protocol}, {probe.input if probe.protocol == 'sgd' else 'cached'}) "
        f"of {enc.config.model.backbone} ({enc.weights} weights, step {enc.step}) from "
        f"{enc.checkpoint} on {inputs.config.data.name} {inputs.config.data.eval_train_split} → "
        f"{inputs.config.data.eval_test_split}, {inputs.num_classes} classes; "
        f"{inputs.describe_features()}"
    )
    from ssl_jax.output.writers import create_writer  # clu's TensorBoard writer: the job's only

    main = jax.process_index() == 0
    writer = create_writer(workdir) if main else None
    if main:
        jobs.write_json(os.path.join(workdir, CONFIG_FILE), config.to_dict())
    t0 = time.time()
    if probe.protocol == "fast":
        r = run_fast(inputs, probe, mesh=mesh)
        if writer is not None:
            writer.write_scalars(0, {"probe/top1": r["top1"], "probe/top5": r["top5"]})
    else:
        r = run_sgd(inputs, probe, mesh=mesh, writer=writer, log=log)
    seconds = time.time() - t0
    record = {
        "top1": float(r["top1"]),
        "top5": float(r["top5"]),
        "num_test": int(r["count"]),
        "protocol": probe.protocol,
        "input": probe.input,
        "steps": int(r["steps"]),
        "init": os.path.abspath(config.init),
        "checkpoint": enc.checkpoint,
        "pretrain_step": enc.step,
        "weights": enc.weights,
        "dataset": inputs.config.data.name,
        "num_classes": inputs.num_classes,
        "features": inputs.features,
        "feature_dim": inputs.feature_dim,
        "seconds": seconds,
    }
    if "l2" in r:
        record["l2"] = r["l2"]
    if main:
        save_head(os.path.join(workdir, HEAD_FILE), r["kernel"], r["bias"])
        jobs.write_json(os.path.join(workdir, RESULT_FILE), record)
        writer.flush()
    log(
        f"probe/top1 {100 * record['top1']:.2f}%  probe/top5 {100 * record['top5']:.2f}%  "
        f"{inputs.describe_features()}  ({record['num_test']} test images, {seconds:.1f}s); "
        f"head → {workdir}/{HEAD_FILE}"
    )
    return record


def save_head(path: str, kernel: np.ndarray, bias: np.ndarray) -> None:
    """`kernel [D, C]`, `bias [C]` (applied to raw backbone features) written atomically."""
    tmp = path + ".tmp.npz"
    np.savez(tmp, kernel=np.asarray(kernel, np.float32), bias=np.asarray(bias, np.float32))
    os.replace(tmp, path)


def load_head(path: str) -> dict[str, np.ndarray]:
    """A saved head: `path` is a probe workdir or its `probe_head.npz`."""
    if os.path.isdir(path):
        path = os.path.join(path, HEAD_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found: run the linear_probe job first")
    with np.load(path) as z:
        return {"kernel": z["kernel"], "bias": z["bias"]}
