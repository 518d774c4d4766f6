"""Fast linear probe on cached features (small data): full-batch L-BFGS softmax regression.

Features are standardised with the training statistics; the L2 penalty is chosen on a held-out 10% of
the training features from `l2_grid`, then the probe is refit on all training features.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import optax


@functools.partial(jax.jit, static_argnames=("num_classes", "iterations"))
def _fit_softmax(x, y, l2, *, num_classes, iterations):
    dim = x.shape[1]
    params = {"w": jnp.zeros((dim, num_classes)), "b": jnp.zeros((num_classes,))}

    def loss(p):
        logits = x @ p["w"] + p["b"]
        ce = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        return ce + 0.5 * l2 * jnp.sum(p["w"] ** 2)

    opt = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(loss)

    def step(carry, _):
        p, s = carry
        value, grad = value_and_grad(p, state=s)
        updates, s = opt.update(grad, s, p, value=value, grad=grad, value_fn=loss)
        return (optax.apply_updates(p, updates), s), value

    (params, _), _ = jax.lax.scan(step, (params, opt.init(params)), None, length=iterations)
    return params


def _accuracy(params, x, y) -> tuple[float, float]:
    logits = np.asarray(x @ params["w"] + params["b"])
    ranked = np.argsort(-logits, axis=1)
    return float((ranked[:, 0] == y).mean()), float((ranked[:, :5] == y[:, None]).any(1).mean())


def fit_linear_probe(
    train_x: np.ndarray,
    train_y: np.ndarray,
    test_x: np.ndarray,
    test_y: np.ndarray,
    *,
    l2_grid=(1e-6, 1e-5, 1e-4, 1e-3, 1e-2),
    iterations: int = 200,
    seed: int = 0,
) -> dict[str, float]:
    """Returns {'top1', 'top5', 'l2'} on the test features."""
    num_classes = int(max(train_y.max(), test_y.max())) + 1
    mean = train_x.mean(0, keepdims=True)
    std = train_x.std(0, keepdims=True) + 1e-6
    tr = jnp.asarray((train_x - mean) / std, jnp.float32)
    te = jnp.asarray((test_x - mean) / std, jnp.float32)
    order = np.random.default_rng(seed).permutation(len(tr))
    held = order[: max(1, len(tr) // 10)]
    fit = order[len(held) :]
    best = max(
        l2_grid,
        key=lambda l2: _accuracy(
            _fit_softmax(tr[fit], jnp.asarray(train_y[fit]), l2, num_classes=num_classes,
                         iterations=iterations),
            tr[held],
            train_y[held],
        )[0],
    )
    params = _fit_softmax(tr, jnp.asarray(train_y), best, num_classes=num_classes, iterations=iterations)
    top1, top5 = _accuracy(params, te, test_y)
    return {"top1": top1, "top5": top5, "l2": float(best)}
