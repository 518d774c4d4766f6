"""InterCLR (Xie et al., "Delving into Inter-Image Invariance", IJCV 2022): MoCo v2 (intra-image) plus an
inter-image branch against a feature bank clustered online.

Official code: mmselfsup 0.x `models/algorithms/interclr_moco.py`, `models/memories/interclr_memory.py`,
`core/hooks/interclr_hook.py`. Order of one step, as the code:

```
target = EMA(target, online)                                   # before the keys, m 0.999 (MoCo)
q = normalize(online(x_q));  k = normalize(target(shuffle(x_k)))[unshuffle]
L_intra = InfoNCE(q, k, queue, τ 0.2)
l = labels[idx];  p = a uniform member of cluster l in the bank (may be idx itself)
n = K negatives, sampler ∈ {semihard, hard, random, semieasy}, same-cluster rows excluded
L_inter = MarginNCE(q·bank[p], q·bank[n], τ 0.2, m −0.5)       # m −0.5 ADDS 0.5 to the positive
loss = 0.75·L_intra + 0.25·L_inter                               # gradients only through q
enqueue(k);  r = normalize((1−μ)·bank[idx] + μ·k), μ 1.0 (replace);  bank[idx] = r
labels[idx] = argmax_c centroids_c · r  (online labels: the mixed row; dot, not cosine)
every 10 steps: centroids = means of the bank's clusters (empty ones keep theirs)
every step: clusters < 20 members dissolved to the nearest other centroid, empty ones refilled by a
            2-means split of the largest (`clustering.fix_small_clusters`)
```
Before step 0 of a fresh run (`prepare_buffers`, never on resume): the bank holds the query encoder's
eval-mode projections of the whole train split (eval transform), then k-means (`clustering.kmeans`,
20 iterations, on device and sharded; the code uses faiss on the host) gives labels and centroids;
with online labels clusters under `min_cluster_size` are already refilled there (the code does it at
the first step).

Everything is device state, sharded (`buffer_specs`): bank `[N, D]` and labels `[N]` over `data`, the
MoCo queue over `data`, centroids `[C, D]` replicated, plus a few replicated scalars of the last
update (`cluster_stats`, logged as `train/label_change_ratio`, `train/num_small_clusters`,
`train/largest_cluster`). A checkpoint holds all of it: resume is exact.

`labels` (the hook's `online_labels`; the paper's ablation, Fig. 6a):
- 'online' (the code's default): as above.
- 'offline': the hook's `after_train_epoch` (`interclr_hook.py` L131–133, `deepcluster` L135–168):
  every `offline_every_epochs` epochs (its `interval`, 10 in the ImageNet config) the whole train split
  is re-embedded by the current query encoder (eval mode, eval transform) and k-means of those
  features gives the labels (`refresh_buffers`, run by the loop between steps, before that step's
  checkpoint). The bank keeps its per-step rows (`update_simple_memory`); centroids are not used and
  not updated, and no small-cluster fix runs, at the start either (`after_train_iter` returns
  early): k-means only fills empty clusters (`assign_label` asserts none).
- 'offline_bank' (ours, cheaper): every `offline_every_epochs` epochs k-means of the (stale) bank
  inside the step (`lax.cond`), with the small-cluster fix.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from ssl_jax.config_checks import ConfigError, hp_field
from ssl_jax.methods import common, losses, memory, mocov2
from ssl_jax.methods.negatives import clustering, sampling
from ssl_jax.parallel.sharding import DATA_AXIS

EMA_BEFORE_KEYS = True  # MoCo v2's order: momentum update, then the keys
USES_TARGET = True

LABEL_MODES = ("online", "offline", "offline_bank")


@dataclasses.dataclass(frozen=True)
class Hparams(common.QueryKeyBN):
    """Defaults: the official ImageNet config (`interclr-moco_resnet50_8xb32-coslr-200e_in1k.py`)."""

    temperature: float = hp_field(0.2, low=0.0, low_open=True)  # intra (ContrastiveHead τ)
    queue_size: int = hp_field(65536, low=1)
    inter_temperature: float = hp_field(0.2, low=0.0, low_open=True)  # code 0.2; paper 0.1 (both)
    margin: float = hp_field(-0.5, low=-2.0, high=2.0)  # MarginNCE m, subtracted from cos(q, p)
    intra_weight: float = hp_field(0.75, low=0.0)  # λ, Eq. 6: code and paper 0.75 / 0.25
    inter_weight: float = hp_field(0.25, low=0.0)
    num_clusters: int = hp_field(10000, low=2)
    num_negatives: int = hp_field(16384, low=1)
    pool_size: int = hp_field(128000, low=1)  # semihard / semieasy pool (~10% of ImageNet)
    sampler: str = hp_field("semihard", choices=sampling.SAMPLERS)
    bank_size: int = hp_field(1_281_167, low=1)  # must equal the number of training examples
    bank_momentum: float = hp_field(
        1.0, low=0.0, high=1.0, low_open=True
    )  # code 1 (replace); paper ω 0.5
    labels: str = hp_field("online", choices=LABEL_MODES)
    offline_every_epochs: int = hp_field(10, low=1)  # the hook's `interval`
    centroid_every_steps: int = hp_field(10, low=1)
    min_cluster_size: int = hp_field(20, low=1)
    kmeans_iters: int = hp_field(20, low=1)
    # official DDP: 8 GPUs × 32, per-GPU BN, keys shuffled across GPUs (as MoCo v2)
    query_bn_group_size: int = hp_field(32, low=0)
    key_bn_group_size: int = hp_field(32, low=0)
    shuffle_bn: bool = True


def check_config(ctx: common.StepContext) -> None:
    hp: Hparams = ctx.hp
    common.require_views(ctx, 2)
    n = ctx.num_train_examples
    if hp.bank_size != n:
        raise ConfigError(
            f"config.method_config.bank_size={hp.bank_size} differs from the number of training "
            f"examples ({n}); allowed: {n}"
        )
    for key, value in (("bank_size", hp.bank_size), ("queue_size", hp.queue_size)):
        common.require_divisible(
            f"config.method_config.{key}", value, ctx.num_devices, "the device count"
        )
    common.require_divisible(
        "config.method_config.queue_size",
        hp.queue_size,
        ctx.config.global_batch_size,
        "the global key batch (config.global_batch_size)",
    )
    limits = (
        ("num_clusters", hp.num_clusters, n),
        ("num_negatives", hp.num_negatives, n),
        ("pool_size", hp.pool_size, n),
    )
    for key, value, high in limits:
        if value > high:
            raise ConfigError(
                f"config.method_config.{key}={value} exceeds the bank's {high} rows; allowed: ≤ {high}"
            )
    if hp.sampler in ("semihard", "semieasy") and hp.num_negatives > hp.pool_size:
        raise ConfigError(
            f"config.method_config.num_negatives={hp.num_negatives} > pool_size={hp.pool_size}: "
            f"the {hp.sampler} sampler draws without replacement from the pool"
        )
    common.check_bn_config(ctx, key_batch=ctx.config.global_batch_size)


def buffer_specs(ctx: common.StepContext) -> dict:
    return {
        **mocov2.buffer_specs(ctx),  # MoCo's queue
        "bank": memory.ROWS,
        "labels": P(DATA_AXIS),
        "centroids": P(),
        "cluster_stats": P(),
    }


def _stats(change=0.0, small=0, largest=0) -> dict:
    return {
        "label_change_ratio": jnp.asarray(change, jnp.float32),
        "num_small_clusters": jnp.asarray(small, jnp.int32),
        "largest_cluster": jnp.asarray(largest, jnp.int32),
    }


def init_buffers(rng, ctx: common.StepContext) -> dict:
    """MoCo's queue, and placeholders of the right shapes: `prepare_buffers` fills the bank, labels
    and centroids before step 0."""
    hp: Hparams = ctx.hp
    queue_rng, bank_rng = jax.random.split(rng)
    return {
        **mocov2.init_buffers(queue_rng, ctx),
        "bank": memory.random_rows(bank_rng, hp.bank_size, ctx.embed_dim),
        "labels": jnp.arange(hp.bank_size, dtype=jnp.int32) % hp.num_clusters,
        "centroids": jnp.zeros((hp.num_clusters, ctx.embed_dim), jnp.float32),
        "cluster_stats": _stats(),
    }


def _embed_fn(model):
    def embed(variables, images):
        out = model.apply(variables, images, train=False, use_predictor=False)
        return losses.l2_normalize(out["projection"])

    return embed


_KMEANS_KEY = 0x6B6D  # 'km': the k-means keys, independent of the step keys


def _deepcluster(ctx: common.StepContext, state, embedder, table, rng, min_size: int, what: str):
    """The hook's `deepcluster`: the whole train split through the query encoder (eval mode, eval
    transform), L2-normalised into `table` `[N, D]` (donated), then `clustering.kmeans` (C clusters,
    `kmeans_iters`; clusters under `min_size` refilled) → (features, labels `[N]`, centroids `[C, D]`,
    cluster sizes `[C]` on the host). Prints the times and the size histogram."""
    hp: Hparams = ctx.hp
    t0 = time.perf_counter()
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    features = embedder.embed_rows(table, _embed_fn(ctx.model), variables)
    features.block_until_ready()
    t1 = time.perf_counter()
    labels, centroids = jax.jit(
        lambda r, b: clustering.kmeans(
            r, b, hp.num_clusters, ctx.mesh, iters=hp.kmeans_iters, min_size=min_size
        )
    )(rng, features)
    sizes = np.asarray(
        jax.device_get(
            jax.jit(lambda lab: clustering.cluster_sizes(lab, hp.num_clusters, ctx.mesh))(labels)
        )
    )
    t2 = time.perf_counter()
    hist, edges = np.histogram(sizes, bins=min(10, max(1, len(np.unique(sizes)))))
    print(
        f"InterCLR {what}: {hp.bank_size} rows embedded in {t1 - t0:.1f} s; k-means "
        f"({hp.num_clusters} clusters, {hp.kmeans_iters} iterations) in {t2 - t1:.1f} s; cluster "
        f"sizes min {sizes.min()} median {int(np.median(sizes))} max {sizes.max()}; histogram "
        + ", ".join(f"[{edges[i]:.0f}, {edges[i + 1]:.0f}): {c}" for i, c in enumerate(hist)),
        flush=True,
    )
    labels = jax.device_put(labels, NamedSharding(ctx.mesh, P(DATA_AXIS)))
    return features, labels, centroids, sizes


def _cluster_stats(ctx, change, sizes: np.ndarray):
    hp: Hparams = ctx.hp
    stats = _stats(change, int((sizes < hp.min_cluster_size).sum()), int(sizes.max()))
    return jax.device_put(stats, NamedSharding(ctx.mesh, P()))


def prepare_buffers(ctx: common.StepContext, state, embedder):
    """The official `InterCLRHook.before_run` → `deepcluster` → `init_memory`: the bank holds the
    query encoder's projections of the train split; k-means → labels and centroids (with online
    labels small clusters are refilled here, the code at the first step; offline: empty ones only)."""
    hp: Hparams = ctx.hp
    rng = jax.random.fold_in(state.rng, _KMEANS_KEY)
    min_size = 1 if hp.labels == "offline" else hp.min_cluster_size
    bank, labels, centroids, sizes = _deepcluster(
        ctx, state, embedder, state.buffers["bank"], rng, min_size, "bank"
    )
    buffers = dict(state.buffers)
    buffers.update(
        bank=bank,
        labels=labels,
        centroids=jax.device_put(centroids, NamedSharding(ctx.mesh, P())),
        cluster_stats=_cluster_stats(ctx, 0.0, sizes),
    )
    return state.replace(buffers=buffers)


def refresh_every_steps(ctx: common.StepContext) -> int:
    """Steps between two `refresh_buffers` (0: never): `offline_every_epochs` epochs with
    `labels='offline'` (the hook's `every_n_epochs(runner, interval)` after an epoch)."""
    hp: Hparams = ctx.hp
    return hp.offline_every_epochs * ctx.steps_per_epoch if hp.labels == "offline" else 0


def refresh_buffers(ctx: common.StepContext, state, embedder):
    """Offline labels (`after_train_epoch` → `deepcluster` → `assign_label`), run by the loop after
    the step that makes `state.step` a multiple of `refresh_every_steps`: the labels become k-means
    (key: the state's rng and step) of the train split freshly embedded by the current query encoder.
    The bank and the centroids are kept; no small-cluster fix. A function of the state: resume is
    exact (the checkpoint of that step is saved after it)."""
    bank = state.buffers["bank"]
    rng = jax.jit(lambda r, s: jax.random.fold_in(jax.random.fold_in(r, _KMEANS_KEY), s))(
        state.rng, state.step
    )
    table = jnp.zeros(bank.shape, bank.dtype, device=bank.sharding)
    _, labels, _, sizes = _deepcluster(ctx, state, embedder, table, rng, 1, "offline labels")
    change = jax.jit(lambda a, b: jnp.mean((a != b).astype(jnp.float32)))(
        labels, state.buffers["labels"]
    )
    buffers = dict(state.buffers)
    buffers.update(labels=labels, cluster_stats=_cluster_stats(ctx, change, sizes))
    return state.replace(buffers=buffers)


def loss_fn(ctx, params, batch_stats, inp: common.StepInput):
    hp: Hparams = ctx.hp
    buffers = inp.buffers
    out_q, new_stats = common.online_forward(ctx, params, batch_stats, inp.views[0])
    q = losses.l2_normalize(out_q["projection"])
    key_rng, positive_rng, negative_rng = jax.random.split(inp.rng, 3)
    out_k, new_target_stats = common.target_forward(ctx, inp.target, inp.views[1], key_rng)
    k = losses.l2_normalize(out_k["projection"])
    intra = losses.info_nce(q, k, buffers["queue"], hp.temperature)

    index = inp.batch["index"]
    bank, labels = buffers["bank"], buffers["labels"]
    query_labels = memory.read_rows(labels, index, ctx.mesh)
    q_const = jax.lax.stop_gradient(q)
    positive = sampling.cluster_positive(positive_rng, labels, query_labels, ctx.mesh)
    negatives, valid = sampling.inter_negatives(
        negative_rng,
        hp.sampler,
        bank,
        labels,
        q_const,
        query_labels,
        hp.num_negatives,
        hp.pool_size,
        ctx.mesh,
    )
    columns = jnp.concatenate([positive[:, None], negatives], axis=1)
    sims = memory.row_similarities(bank, q, columns, ctx.mesh)  # [B, 1 + K], grad through q
    inter = losses.margin_nce_from_similarities(
        sims[:, 0], sims[:, 1:], hp.inter_temperature, hp.margin, valid
    )
    loss = hp.intra_weight * intra + hp.inter_weight * inter
    metrics = {
        "intra_loss": intra,
        "inter_loss": inter,
        "pos_sim": jnp.mean(jnp.sum(q * k, axis=-1)),
        "neg_sim": jnp.mean(q_const @ jax.lax.stop_gradient(buffers["queue"]).T),
        "inter_pos_sim": jnp.mean(sims[:, 0]),
        "inter_neg_sim": jnp.sum(jnp.where(valid, sims[:, 1:], 0.0)) / jnp.maximum(valid.sum(), 1),
        "inter_valid_negatives": jnp.mean(valid.sum(axis=1).astype(jnp.float32)),
    }
    return loss, common.StepOutput(
        metrics=metrics,
        batch_stats=new_stats,
        target_batch_stats=new_target_stats,
        updates={
            "keys": jax.lax.stop_gradient(k),
            "query_labels": query_labels,
            # the inter branch's rows (for the tests and the sampler metrics; not written anywhere)
            "positive": positive,
            "negatives": negatives,
            "valid": valid,
        },
    )


def update_buffers(ctx, inp: common.StepInput, updates: dict) -> dict:
    """MoCo's enqueue, the bank write, then per `labels`: 'online': the label of each written row,
    centroids every `centroid_every_steps` and the small-cluster fix (official
    `update_samples_memory`, `update_centroids_memory`, `deal_with_small_clusters`); 'offline': the
    bank write only (`update_simple_memory`; `refresh_buffers` relabels between steps);
    'offline_bank': k-means of the bank every `offline_every_epochs` epochs."""
    hp: Hparams = ctx.hp
    mesh = ctx.mesh
    buffers = inp.buffers
    index, keys, old_labels = inp.batch["index"], updates["keys"], updates["query_labels"]

    old_rows = memory.read_rows(buffers["bank"], index, mesh)
    rows = losses.l2_normalize((1.0 - hp.bank_momentum) * old_rows + hp.bank_momentum * keys)
    bank = memory.write_rows(buffers["bank"], index, rows, mesh)
    labels, centroids = buffers["labels"], buffers["centroids"]
    stats = buffers["cluster_stats"]
    step = inp.step + 1  # updates applied after this one
    if hp.labels == "online":
        # the label of the written (momentum-mixed) row, `interclr_memory.py` L128–139
        new_labels = jnp.argmax(rows @ centroids.T, axis=-1).astype(jnp.int32)
        change = jnp.mean((new_labels != old_labels).astype(jnp.float32))
        labels = memory.write_rows(labels, index, new_labels, mesh)
        centroids = jax.lax.cond(
            step % hp.centroid_every_steps == 0,
            lambda: clustering.centroids_from_bank(bank, labels, centroids, mesh),
            lambda: centroids,
        )
        labels, centroids, fix = clustering.fix_small_clusters(
            bank, labels, centroids, mesh, min_size=hp.min_cluster_size
        )
        stats = _stats(change, fix["num_small"], fix["largest"])
    elif hp.labels == "offline_bank":
        every = hp.offline_every_epochs * ctx.steps_per_epoch

        def recluster():
            rng = jax.random.fold_in(inp.rng, _KMEANS_KEY)
            return clustering.kmeans(
                rng,
                bank,
                hp.num_clusters,
                mesh,
                iters=hp.kmeans_iters,
                min_size=hp.min_cluster_size,
            )

        new_labels, centroids = jax.lax.cond(
            step % every == 0, recluster, lambda: (labels, centroids)
        )
        change = jnp.mean((new_labels != labels).astype(jnp.float32))
        labels = new_labels
        sizes = clustering.cluster_sizes(labels, hp.num_clusters, mesh)
        stats = _stats(change, jnp.sum(sizes < hp.min_cluster_size), jnp.max(sizes))
    return {
        **mocov2.update_buffers(ctx, inp, updates),  # MoCo's enqueue of the keys
        "bank": bank,
        "labels": labels,
        "centroids": centroids,
        "cluster_stats": stats,
    }


def buffer_metrics(ctx, buffers) -> dict:
    """The last update's cluster statistics (replicated scalars: free to log every step)."""
    del ctx
    return dict(buffers["cluster_stats"])
