"""Linear read-outs fitted on features in memory: the fast probe (`fit_linear_probe`, protocol
'fast' and the probe table) and the closed-form ridge fit the view studies share.

`fit_linear_probe`: full-batch L-BFGS softmax regression (or closed-form ridge onto one-hot labels)
on features standardised with the training statistics; the L2 penalty is chosen on a held-out 10%
of the training features from `l2_grid`, then the probe is refit on all training features.
"""

from __future__ import annotations

import contextlib
import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ssl_jax.output import progress


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
