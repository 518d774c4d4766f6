"""Weighted kNN on frozen features (Wu et al. 2018): the online monitor and the kNN evaluator.

Vote of the k nearest training features (cosine similarity), each weighted by exp(sim/τ).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from ssl_jax import memory


@functools.partial(jax.jit, static_argnames=("k", "num_classes"))
def _knn_batch(train_f, train_onehot, test_f, *, k, temperature, num_classes):
    sims = test_f @ train_f.T  # [b, N]
    top_sims, top_idx = jax.lax.top_k(sims, k)
    weights = jnp.exp(top_sims / temperature)  # [b, k]
    votes = jnp.einsum("bk,bkc->bc", weights, train_onehot[top_idx])
    return votes


def weighted_knn(
    train_features: np.ndarray,
    train_labels: np.ndarray,
    test_features: np.ndarray,
    test_labels: np.ndarray,
    *,
    k: int = 200,
    temperature: float = 0.07,
    batch_size: int = 512,
) -> dict[str, float]:
    """Top-1/top-5 accuracy of weighted kNN. Features `[N, D]` (normalised here), labels int `[N]`."""
    num_classes = int(max(train_labels.max(), test_labels.max())) + 1
    k = min(k, len(train_features))
    train_f = memory.l2_normalize(jnp.asarray(train_features, jnp.float32))
    onehot = jax.nn.one_hot(jnp.asarray(train_labels), num_classes)
    top1 = top5 = 0
    for start in range(0, len(test_features), batch_size):
        f = memory.l2_normalize(jnp.asarray(test_features[start : start + batch_size], jnp.float32))
        votes = np.asarray(
            _knn_batch(train_f, onehot, f, k=k, temperature=temperature, num_classes=num_classes)
        )
        y = test_labels[start : start + batch_size]
        ranked = np.argsort(-votes, axis=1)
        top1 += int((ranked[:, 0] == y).sum())
        top5 += int((ranked[:, :5] == y[:, None]).any(axis=1).sum())
    n = len(test_features)
    return {"top1": top1 / n, "top5": top5 / n}
