"""Linear probes on a frozen backbone: the fast probe on cached features and the SGD protocols.

- `fit_linear_probe` (protocol 'fast', small data): full-batch L-BFGS softmax regression on cached
  features standardised with the training statistics; the L2 penalty is chosen on a held-out 10% of
  the training features from `l2_grid`, then the probe is refit on all training features.
- `run(config, workdir)`: the `linear_probe` job (`configs/linear_probe.py`). Protocol 'sgd' trains
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

import contextlib
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

from ssl_jax import optim, progress, sharding
from ssl_jax.data import device_augment, pipeline, train_split
from ssl_jax.evaluate import jobs
from ssl_jax.evaluate.encoder import _replicated_scalar, sharded_split_features
from ssl_jax.models import compute_dtype
from ssl_jax.sharding import DATA_AXIS


@functools.partial(jax.jit, static_argnames=("iterations",))
def _fit_softmax(x, y, l2, precond, init, unprecond=None, *, iterations, tol):
    """Multinomial logistic regression: min over {w, b} of mean CE(x w + b, y) + l2/2 ‖w‖², by
    full-batch L-BFGS (optax, zoom line search) from `init`, until the gradient's norm is below
    `tol` or after `iterations` iterations. Returns `(params, iterations done, gradient norm)`.
    `unprecond`, when given, is `precond`'s inverse (else it is solved for).

    L-BFGS runs in the variables v of w = `precond` v (`precond` = (XᵀX/n + l2 I)^(-1/2), which
    makes the Hessian of the quadratic part the identity): the same minimum, reached in tens of
    iterations where the raw, ill-conditioned features (correlated channels) take thousands."""

    # the labels as one-hot rows, not gathered (`take_along_axis`): its derivatives are scatters of
    # shape [n, 1] that XLA constant-folds at compile time, seconds for a 54,000-row probe
    onehot = jax.nn.one_hot(y, init["w"].shape[1], dtype=jnp.float32)

    def objective(w, b):
        logits = x @ w + b
        ce = -jnp.sum(jax.nn.log_softmax(logits) * onehot, axis=1).mean()
        return ce + 0.5 * l2 * jnp.sum(w**2)

    loss = lambda p: objective(precond @ p["v"], p["b"])
    opt = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(loss)

    def step(carry):
        p, s = carry
        value, grad = value_and_grad(p, state=s)
        updates, s = opt.update(grad, s, p, value=value, grad=grad, value_fn=loss)
        return optax.apply_updates(p, updates), s

    def go_on(carry):
        _, s = carry
        count = optax.tree_utils.tree_get(s, "count")
        grad_norm = optax.tree_utils.tree_norm(optax.tree_utils.tree_get(s, "grad"))
        return (count == 0) | ((count < iterations) & (grad_norm >= tol))

    if unprecond is None:
        start = {"v": jnp.linalg.solve(precond, init["w"]), "b": init["b"]}
    else:
        start = {"v": unprecond @ init["w"], "b": init["b"]}
    p, s = jax.lax.while_loop(go_on, step, (start, opt.init(start)))
    params = {"w": precond @ p["v"], "b": p["b"]}
    grad_norm = optax.tree_utils.tree_norm(jax.grad(objective, (0, 1))(params["w"], params["b"]))
    return params, optax.tree_utils.tree_get(s, "count"), grad_norm


def _softmax_fitter(x: jax.Array, y: np.ndarray, num_classes: int, iterations: int, tol: float):
    """`fit(rows, l2, init=None) -> ({'w', 'b'}, iterations, gradient norm)` of `_fit_softmax` on
    the rows `rows` of `x`; `init` warm-starts (the previous, larger l2's solution)."""
    labels = jnp.asarray(y, jnp.int32)
    spectra = {}

    def fit(rows, l2, init=None):
        if init is None:
            init = {
                "w": jnp.zeros((x.shape[1], num_classes), jnp.float32),
                "b": jnp.zeros((num_classes,), jnp.float32),
            }
        key = (len(rows), int(rows[0]), int(rows[-1]))
        xr = x[jnp.asarray(rows)]
        if key not in spectra:  # the covariance's eigendecomposition, once per row subset
            xh = np.asarray(xr, np.float64)
            if len(xh) < xh.shape[1]:  # fewer rows than features (raw pixels of a small set):
                # the covariance's nonzero spectrum from the thin SVD of the rows, O(n² D)
                # instead of eigh's O(D³); its null space is handled below
                _, sv, vt = np.linalg.svd(xh, full_matrices=False)
                spectra[key] = (sv**2 / len(xh), vt.T, True)
            else:
                spectra[key] = (*np.linalg.eigh(xh.T @ xh / len(xh)), False)
        eigval, eigvec, partial = spectra[key]
        root = np.sqrt(np.maximum(eigval, 0.0) + l2)
        precond, unprecond = (eigvec / root) @ eigvec.T, None
        if partial:  # the rest of the feature space: covariance 0, so scale 1/√l2 (inverse: √l2)
            rest = np.eye(len(eigvec)) - eigvec @ eigvec.T
            precond = precond + rest / np.sqrt(l2)
            unprecond = jnp.asarray((eigvec * root) @ eigvec.T + rest * np.sqrt(l2), jnp.float32)
        params, count, grad_norm = _fit_softmax(
            xr,
            labels[jnp.asarray(rows)],
            jnp.float32(l2),
            jnp.asarray(precond, jnp.float32),
            init,
            unprecond,
            iterations=iterations,
            tol=tol,
        )
        return params, int(count), float(grad_norm)

    return fit


def _accuracy(params, x, y) -> tuple[float, float]:
    logits = np.asarray(x @ params["w"] + params["b"])
    ranked = np.argsort(-logits, axis=1)
    return float((ranked[:, 0] == y).mean()), float((ranked[:, :5] == y[:, None]).any(1).mean())


def standardisation(train_x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(mean, std + 1e-6)` `[1, D]` of the training features: every linear read-out (the probe,
    the view studies' regressions) fits on `(x - mean) / std` with the training statistics."""
    return train_x.mean(0, keepdims=True), train_x.std(0, keepdims=True) + 1e-6


def ridge_fitter(x: np.ndarray, targets: np.ndarray):
    """Closed-form ridge regression of `targets` `[n, k]` on zero-mean features `x` `[n, D]` (Gram
    matrix once per row subset, float64): `fit(rows, l2) -> {'w' [D, k], 'b' [k]}` minimising
    ‖x w + b − targets‖² / n + l2 ‖w‖², i.e. W = (XᵀX + l2·n·I)⁻¹ Xᵀ(Y − Ȳ), b = Ȳ. Seconds even
    for 784-d pixels. The probe's 'ridge' solver (one-hot targets) and the view studies' position
    read-out."""
    x64 = x.astype(np.float64)
    targets = np.asarray(targets, np.float64)
    cache = {}

    def fit(rows, l2):
        key = (len(rows), int(rows[0]), int(rows[-1]))
        if key not in cache:
            xr = x64[rows]
            yr = targets[rows]
            cache[key] = (xr.T @ xr, xr.T @ (yr - yr.mean(0)), yr.mean(0), len(rows))
        gram, xty, ymean, n = cache[key]
        w = np.linalg.solve(gram + l2 * n * np.eye(len(gram)), xty)
        return {"w": w.astype(np.float32), "b": ymean.astype(np.float32)}

    return fit


# The L2 grid of each solver when none is given. 'lbfgs' minimises mean CE + l2/2 ‖w‖² on
# standardised features: l2 = 1 / (C · n) in scikit-learn's terms, so on 54,000 held-in rows
# 1e-5 … 1e-2 spans C ≈ 1.9 … 0.0019 (its default C 1 is l2 ≈ 1.9e-5). 'ridge' minimises
# ‖x w + b − onehot‖² / n + l2 ‖w‖² (the closed form's own scale).
L2_GRIDS = {
    "lbfgs": (1e-6, 1e-5, 1e-4, 1e-3, 1e-2),
    "ridge": (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0),
}
SOLVERS = tuple(L2_GRIDS)
SOLVER_NAMES = {
    "lbfgs": "multinomial logistic regression (L-BFGS)",
    "ridge": "ridge regression onto one-hot labels (closed form)",
}


def fit_linear_probe(
    train_x: np.ndarray,
    train_y: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    *,
    l2_grid=None,
    iterations: int = 100,
    tol: float = 1e-4,
    seed: int = 0,
    return_head: bool = False,
    solver: str = "lbfgs",
    progress_lines: bool = False,
) -> dict:
    """A linear classifier on features standardised with the training statistics, its L2 penalty
    chosen from `l2_grid` (default `L2_GRIDS[solver]`) by the accuracy on a held-out 10% of the
    training rows, then refit on all of them. `solver`: 'lbfgs' (multinomial logistic regression,
    `_fit_softmax`: the grid from the largest l2 down, each fit warm-started from the previous one;
    at most `iterations` L-BFGS iterations, stopped when the gradient norm is below `tol`) or
    'ridge' (closed form). Returns {'top1', 'top5', 'l2', 'held_out_top1'} on the test features
    (lbfgs also 'iterations' and 'grad_norm' of the final fit); with `return_head` also `kernel`
    `[D, C]` and `bias` `[C]` with the standardisation folded in (they apply to raw features).
    `progress_lines`: `progress.phase` lines around the l2 selection and the final fit (the job)."""
    if solver not in L2_GRIDS:
        raise ValueError(f"solver={solver!r}; allowed: {list(SOLVERS)}")
    grid = sorted((float(v) for v in (l2_grid or L2_GRIDS[solver])), reverse=True)
    num_classes = int(max(train_y.max(), test_y.max())) + 1
    mean, std = standardisation(train_x)
    tr = jnp.asarray((train_x - mean) / std, jnp.float32)
    te = jnp.asarray((test_x - mean) / std, jnp.float32)
    order = np.random.default_rng(seed).permutation(len(tr))
    held = order[: max(1, len(tr) // 10)]
    fit = np.sort(order[len(held) :])
    held_x, held_y = tr[jnp.asarray(held)], train_y[held]
    scores, extra = {}, {}

    def phase(what):
        quiet = contextlib.nullcontext()
        return progress.phase(f"probe fit ({solver}): {what}") if progress_lines else quiet

    every = np.arange(len(tr))
    choosing = f"l2 grid of {len(grid)} on {len(fit)} train rows, scored on {len(held)} held out"
    if solver == "ridge":
        fit_fn = ridge_fitter(np.asarray(tr), np.eye(num_classes)[train_y])
        with phase(choosing):
            for l2 in grid:
                scores[l2] = _accuracy(fit_fn(fit, l2), held_x, held_y)[0]
        best = max(grid, key=scores.get)  # ties: the largest l2
        with phase(f"l2 {best:g} on all {len(every)} train rows"):
            params = fit_fn(every, best)
    else:
        fit_fn = _softmax_fitter(tr, train_y, num_classes, iterations, tol)
        solutions, init = {}, None
        with phase(choosing):
            for l2 in grid:  # largest first: each solution warm-starts the next, smaller l2
                init, _, _ = fit_fn(fit, l2, init)
                solutions[l2] = init
                scores[l2] = _accuracy(init, held_x, held_y)[0]
        best = max(grid, key=scores.get)
        with phase(f"l2 {best:g} on all {len(every)} train rows"):
            params, count, grad_norm = fit_fn(every, best, solutions[best])
        extra = {"iterations": count, "grad_norm": grad_norm}
    top1, top5 = _accuracy(params, te, test_y)
    result = {"top1": top1, "top5": top5, "l2": best, "held_out_top1": scores[best], **extra}
    if return_head:
        w = np.asarray(params["w"], np.float64)
        kernel = w / std.reshape(-1, 1)
        bias = np.asarray(params["b"], np.float64) - (mean / std).reshape(-1) @ w
        result.update(kernel=kernel.astype(np.float32), bias=bias.astype(np.float32))
    return result


# --------------------------------------------------------------------------------------------------
# The linear_probe job: SGD protocols (jitted, sharded) and the fast protocol.

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
        x = device_augment.eval_input(images, run_data, dtype)
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


def _cache(inputs, key: str, *, mesh, batch_size: int, limit: int):
    """Features of split `config.data.<key>` cached sharded on the devices (a progress phase)."""
    with inputs.embedding(key, limit):
        return sharded_split_features(
            inputs.feature_fn(),
            inputs.encoder.variables,
            inputs.config,
            inputs.config.data[key],
            mesh=mesh,
            batch_size=batch_size,
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
    test = _cache(
        inputs,
        "eval_test_split",
        mesh=mesh,
        batch_size=int(probe.eval_batch_size),
        limit=int(probe.num_test),
    )
    if probe.input == "features":
        train = _cache(
            inputs,
            "eval_train_split",
            mesh=mesh,
            batch_size=int(probe.eval_batch_size),
            limit=int(probe.num_train),
        )
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
    from ssl_jax.writers import create_writer  # clu's TensorBoard writer: the job's only

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
