"""Weighted kNN on frozen features (Wu et al. 2018): the online monitor and the kNN evaluator/job.

Vote of the k nearest training features (cosine similarity), each weighted by exp(sim/τ); the
training split is the memory, the test split the queries.
- `weighted_knn`: host arrays (the pretraining monitor, small data);
- `sharded_weighted_knn`: memory and queries stay sharded over the devices (ImageNet-size memories,
  several hosts); each device ranks its own rows and only k candidates per query leave it;
- `run(config, workdir)`: the `knn` job (`configs/knn.py`) on `knn.features` ('pooled': the last
  stage; 'stages': every stage's pool, concatenated), named in its result line and json.
"""

from __future__ import annotations

import functools
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from ssl_jax.evaluate import jobs
from ssl_jax.evaluate.encoder import ShardedFeatures, _replicated_scalar, sharded_split_features
from ssl_jax.methods import memory
from ssl_jax.output import progress
from ssl_jax.parallel import sharding
from ssl_jax.parallel.sharding import DATA_AXIS


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
    """Top-1/top-5 accuracy of weighted kNN. Features `[N, D]` (normalised here), labels `[N]`."""
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


# --------------------------------------------------------------------------------------------------
# Sharded evaluator: the memory stays on the devices (ImageNet-size memories, multi-host).


def _normalize_rows(x):
    return memory.l2_normalize(x.astype(jnp.float32))


@functools.partial(jax.jit, static_argnames=("ks", "num_classes", "mesh"))
def _knn_counts(mem_f, mem_y, mem_m, q_f, q_y, q_m, i, *, ks, temperature, num_classes, mesh):
    """Correct top-1 / top-5 counts `[len(ks), 2]` of query batch `i` against the whole memory.

    Each device ranks its own memory rows (`top_k` of its local similarities) and only those
    `k` candidates per query leave the device; the global top-k is taken over the
    `devices × k` candidates, which contain it."""
    k_max = max(ks)
    q = _normalize_rows(jax.lax.dynamic_index_in_dim(q_f, i, keepdims=False))  # [G, D]
    y = jax.lax.dynamic_index_in_dim(q_y, i, keepdims=False)
    m = jax.lax.dynamic_index_in_dim(q_m, i, keepdims=False)

    def local(f, labels, valid, q):
        f = f.reshape(-1, f.shape[-1])
        sims = q @ _normalize_rows(f).T  # [G, n_local]
        sims = jnp.where(valid.reshape(1, -1), sims, -jnp.inf)
        s, idx = jax.lax.top_k(sims, min(k_max, f.shape[0]))
        return s, labels.reshape(-1)[idx]

    rows = P(None, DATA_AXIS)
    s, lab = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(P(None, DATA_AXIS, None), rows, rows, P()),
        out_specs=(rows, rows),
    )(mem_f, mem_y, mem_m, q)
    s, j = jax.lax.top_k(s, min(k_max, s.shape[1]))  # global top-k, most similar first
    lab = jnp.take_along_axis(lab, j, axis=1)
    out = []
    for k in ks:
        weights = jnp.exp(s[:, :k] / temperature)  # padding rows: exp(-inf) = 0
        votes = jnp.einsum("bk,bkc->bc", weights, jax.nn.one_hot(lab[:, :k], num_classes))
        _, pred = jax.lax.top_k(votes, min(5, num_classes))
        top1 = (pred[:, 0] == y) & m
        top5 = jnp.any(pred == y[:, None], axis=1) & m
        out.append(jnp.stack([jnp.sum(top1), jnp.sum(top5)]))
    return jnp.stack(out).astype(jnp.int32)


@jax.jit
def _max_label(labels):
    return jnp.max(labels)


def sharded_weighted_knn(
    memory_features: ShardedFeatures,
    queries: ShardedFeatures,
    *,
    mesh,
    ks: tuple[int, ...] = (20, 200),
    temperature: float = 0.07,
    num_classes: int | None = None,
) -> dict[int, dict[str, float]]:
    """Weighted kNN (Wu et al. 2018) of every valid query against every valid memory row, both
    kept sharded on the devices (`encoder.sharded_split_features`); nothing is gathered on a host
    but the counts. Returns `{k: {'top1', 'top5'}}` for each k of `ks` (one ranking serves all).

    Same votes as `weighted_knn`: the k most cosine-similar memory rows, weight exp(sim / τ)."""
    ks = tuple(sorted(int(k) for k in ks))
    if num_classes is None:
        num_classes = 1 + int(
            max(
                _replicated_scalar(_max_label(memory_features.labels)),
                _replicated_scalar(_max_label(queries.labels)),
            )
        )
    total = jnp.zeros((len(ks), 2), jnp.int32)
    for i in range(queries.features.shape[0]):
        total = total + _knn_counts(
            memory_features.features,
            memory_features.labels,
            memory_features.mask,
            queries.features,
            queries.labels,
            queries.mask,
            i,
            ks=ks,
            temperature=temperature,
            num_classes=num_classes,
            mesh=mesh,
        )
    counts = _replicated_scalar(total)
    n = queries.num_valid
    return {k: {"top1": counts[j, 0] / n, "top5": counts[j, 1] / n} for j, k in enumerate(ks)}


RESULT_FILE = "knn_result.json"


def run(config, workdir: str, *, mesh=None, validated=None) -> dict:
    """The knn job (`configs/knn.py`): train split as the memory, test split as the queries, both
    sharded on the devices. Logs `knn/top1_k{k}`, `knn/top5_k{k}` and writes `knn_result.json`.
    `validated`: `validation.validate`'s result (`main`'s), None to validate here (`jobs.prepare`)."""
    mesh = sharding.make_mesh() if mesh is None else mesh
    inputs = jobs.prepare(config, mesh, validated=validated)
    enc, data = inputs.encoder, inputs.config
    main = jax.process_index() == 0
    t0 = time.time()
    fn = inputs.feature_fn()
    common = dict(mesh=mesh, batch_size=int(config.knn.batch_size), feature_dim=inputs.feature_dim)

    def embed(split_key: str, limit: int):
        with inputs.embedding(split_key, limit):
            split = data.data[split_key]
            return sharded_split_features(fn, enc.variables, data, split, limit=limit, **common)

    bank = embed("eval_train_split", int(config.knn.num_train))
    queries = embed("eval_test_split", int(config.knn.num_test))
    t1 = time.time()
    ks = tuple(config.knn.ks)
    with progress.phase(f"weighted kNN (k {', '.join(map(str, ks))})"):
        result = sharded_weighted_knn(
            bank,
            queries,
            mesh=mesh,
            ks=ks,
            temperature=float(config.knn.temperature),
            num_classes=inputs.num_classes,
        )
    t2 = time.time()
    scalars = {}
    for k, r in result.items():
        scalars[f"knn/top1_k{k}"] = float(r["top1"])
        scalars[f"knn/top5_k{k}"] = float(r["top5"])
    record = {
        **scalars,
        "num_train": bank.num_valid,
        "num_test": queries.num_valid,
        "temperature": float(config.knn.temperature),
        "init": os.path.abspath(config.init),
        "checkpoint": enc.checkpoint,
        "pretrain_step": enc.step,
        "weights": enc.weights,
        "dataset": data.data.name,
        "features": inputs.features,
        "feature_dim": inputs.feature_dim,
        "features_seconds": t1 - t0,
        "knn_seconds": t2 - t1,
    }
    if main:
        from ssl_jax.output.writers import create_writer  # clu's TensorBoard writer: the job's only

        writer = create_writer(workdir)
        writer.write_scalars(enc.step, scalars)
        writer.flush()
        jobs.write_json(os.path.join(workdir, RESULT_FILE), record)
        lines = [
            f"weighted kNN (τ {config.knn.temperature}) of {enc.checkpoint} on {data.data.name}: "
            f"{bank.num_valid} memory rows, {queries.num_valid} queries; "
            f"{inputs.describe_features()}"
        ]
        for k, r in result.items():
            lines.append(
                f"  k={k:<4d} top-1 {100 * r['top1']:6.2f}%  top-5 {100 * r['top5']:6.2f}%"
            )
        lines.append(f"  features {t1 - t0:.1f}s, kNN {t2 - t1:.1f}s")
        print("\n".join(lines), flush=True)
    return record
