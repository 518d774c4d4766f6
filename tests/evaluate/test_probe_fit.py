"""The fast probe's fit (`probe_fit`): scikit-learn's logistic regression, and a compile free of
scatters over the rows."""

import jax.numpy as jnp
import numpy as np
import pytest

from ssl_jax.evaluate import probe_fit


def test_lbfgs_probe_is_sklearns_logistic_regression_on_correlated_features():
    """`fit_linear_probe(solver='lbfgs')` minimises mean CE + l2/2 ‖w‖² on standardised features
    (scikit-learn's multinomial LogisticRegression with C = 1 / (n · l2)), and its preconditioned
    L-BFGS converges well inside the iteration cap on strongly correlated features."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    n, d, classes, l2 = 1200, 24, 4, 1e-3
    centers = rng.normal(size=(classes, d))
    y = rng.integers(0, classes, n + 400)
    z = centers[y] + 1.5 * rng.normal(size=(n + 400, d))
    mix = rng.normal(size=(d, d)) @ np.diag(np.logspace(0, -2, d))  # condition number ~1e2
    x = (z @ mix + rng.normal(size=(1, d))).astype(np.float32)
    r = probe_fit.fit_linear_probe(
        x[:n], y[:n], x[n:], y[n:], l2_grid=(l2,), return_head=True, tol=1e-4
    )
    assert r["l2"] == l2 and r["iterations"] < 100 and r["grad_norm"] < 1e-3
    mean, std = x[:n].mean(0), x[:n].std(0) + 1e-6
    ref = LogisticRegression(C=1 / (n * l2), tol=1e-10, max_iter=10_000)
    ref.fit((x[:n] - mean) / std, y[:n])
    logits = x[n:] @ r["kernel"] + r["bias"]
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    np.testing.assert_allclose(probs, ref.predict_proba((x[n:] - mean) / std), atol=2e-3)
    assert r["top1"] == pytest.approx(ref.score((x[n:] - mean) / std, y[n:]), abs=2 / 400)


def test_the_softmax_probe_compiles_no_scatter_over_its_rows():
    """The probe's objective reads the labels as one-hot rows: `take_along_axis` would put
    scatters of shape [rows, 1] in its derivatives, which XLA constant-folds at compile time
    (seconds, and `slow_operation_alarm` blocks in the user's log, for a 54,000-row probe)."""
    rows, dim, classes = 4321, 8, 10  # a row count no other dimension has
    lowered = probe_fit._fit_softmax.lower(
        jnp.zeros((rows, dim), jnp.float32),
        jnp.zeros((rows,), jnp.int32),
        jnp.float32(1e-3),
        jnp.eye(dim),
        {"w": jnp.zeros((dim, classes)), "b": jnp.zeros((classes,))},
        iterations=5,
        tol=1e-6,
    )
    hlo = lowered.compiler_ir("hlo").as_hlo_text()
    over_rows = [
        line
        for line in hlo.splitlines()
        if f"[{rows}," in line and ("scatter(" in line or "gather(" in line)
    ]
    assert not over_rows, over_rows[:3]
