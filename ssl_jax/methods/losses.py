"""Contrastive and relational objectives as pure `jnp` functions.

Conventions shared by every loss here:

* Embeddings are rows: `query`/`key` are `[B, D]`, a queue or memory bank is `[K, D]` (sharded along
  `K` by the caller). Inputs are expected to be L2-normalised already (see `l2_normalize`), except
  where a docstring says otherwise.
* Everything is computed in float32, whatever the input dtype (bfloat16 activations are upcast
  before the similarity matmuls), and every loss returns a float32 scalar: the mean over the batch.
* Gradients flow only through `query`. Every argument that plays the role of a target (`key`,
  `keys`, `queue`) goes through `jax.lax.stop_gradient` inside the loss, so a caller cannot leak
  gradient into the momentum branch or the queue by mistake.
* The positive column is never concatenated to the `[B, K]` negative similarities: the
  log-partition is `logaddexp(pos, logsumexp(neg))`. The result is the same as a cross-entropy over
  `concat([pos, neg])` with label 0, but `[B, K]` keeps the queue's sharding along `K` (a `1 + K`
  wide matrix would not divide evenly over the devices).
"""

from typing import Any

import jax
import jax.numpy as jnp

Array = Any  # jax.Array or anything jnp.asarray accepts


# --------------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------------


def l2_normalize(x: Array, axis: int = -1, eps: float = 1e-12) -> jax.Array:
    """`x / max(‖x‖₂, eps)` along `axis` (torch `F.normalize` semantics); norm taken in float32.

    Returns an array of the input dtype.
    """
    x = jnp.asarray(x)
    x32 = x.astype(jnp.float32)
    norm = jnp.sqrt(jnp.sum(jnp.square(x32), axis=axis, keepdims=True))
    return (x32 / jnp.maximum(norm, eps)).astype(x.dtype)


def cross_entropy(logits: Array, targets: Array) -> jax.Array:
    """Per-example soft cross-entropy `−Σ_j targets_j · log_softmax(logits)_j`.

    Args:
      logits: `[B, C]`.
      targets: `[B, C]` probabilities (rows sum to 1; no gradient is stopped here).

    Returns:
      `[B]` float32.
    """
    logp = jax.nn.log_softmax(jnp.asarray(logits, jnp.float32), axis=-1)
    return -jnp.sum(jnp.asarray(targets, jnp.float32) * logp, axis=-1)


def _f32(x: Array) -> jax.Array:
    return jnp.asarray(x).astype(jnp.float32)


def _target(x: Array) -> jax.Array:
    """A target-branch input: float32 and no gradient."""
    return jax.lax.stop_gradient(_f32(x))


def _rowdot(a: jax.Array, b: jax.Array) -> jax.Array:
    """`[B, D] · [B, D] → [B]`."""
    return jnp.sum(a * b, axis=-1)


def _with_queue(x: jax.Array, queue: jax.Array) -> jax.Array:
    """`[B, D] @ [K, D]ᵀ → [B, K]` similarities with every queue entry."""
    return jnp.einsum("bd,kd->bk", x, queue)


def _log_partition(pos: jax.Array, neg: jax.Array) -> jax.Array:
    """`logsumexp(concat([pos[:, None], neg], 1), 1)` without building the `[B, 1 + K]` matrix."""
    return jnp.logaddexp(pos, jax.nn.logsumexp(neg, axis=-1))


def _nll_of_positive(pos: jax.Array, neg: jax.Array) -> jax.Array:
    """Per-example `−log softmax(concat([pos, neg]))[0]`; `pos` `[B]`, `neg` `[B, K]` (logits)."""
    return _log_partition(pos, neg) - pos


def _sce_distributions(
    query: Array,
    key: Array,
    queue: Array,
    temperature: float,
    temperature_m: float,
    mask_self: bool,
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array]:
    """The online logits and the relational target of SCE (Eqs. 3 and 7, queue form).

    Column 0 is the positive (`q·k`), columns 1..K the queue.

    Returns:
      `(pos, neg, log_z, lse_neg, s_self, s_neg)`:
      `pos = q·k/τ` `[B]`, `neg = q·Qᵀ/τ` `[B, K]`, `log_z` the online log-partition over all
      `1 + K` columns `[B]`, `lse_neg = logsumexp(neg)` `[B]`; the target relations
      `s² = softmax([t_self, k·Qᵀ/τ_m])` split into `s_self` `[B]` and `s_neg` `[B, K]`, where
      `t_self = 0` (official code: the self slot holds a zero similarity) or `−inf` with
      `mask_self=True` (the paper's indicator `1_{i≠k}`, so `s_self = 0`).
    """
    q = _f32(query)
    k = _target(key)
    queue = _target(queue)
    pos = _rowdot(q, k) / temperature
    neg = _with_queue(q, queue) / temperature
    lse_neg = jax.nn.logsumexp(neg, axis=-1)
    log_z = jnp.logaddexp(pos, lse_neg)

    t_neg = _with_queue(k, queue) / temperature_m
    t_self = jnp.full(t_neg.shape[:1], -jnp.inf if mask_self else 0.0, jnp.float32)
    t_log_z = _log_partition(t_self, t_neg)
    s_self = jnp.exp(t_self - t_log_z)
    s_neg = jnp.exp(t_neg - t_log_z[:, None])
    return pos, neg, log_z, lse_neg, s_self, s_neg


# --------------------------------------------------------------------------------------------------
# Losses
# --------------------------------------------------------------------------------------------------


def info_nce(query: Array, key: Array, queue: Array, temperature: float) -> jax.Array:
    """MoCo's InfoNCE (SCE paper Eq. 1 with a memory buffer; MoCo v2 `moco/builder.py`).

    `L = mean_b −log softmax([q_b·k_b, q_b·Qᵀ] / τ)[0]`.

    Args:
      query: `[B, D]` online embeddings, L2-normalised (gradient flows).
      key: `[B, D]` momentum embeddings of the other view, L2-normalised (stop-gradient).
      queue: `[K, D]` negatives, L2-normalised (stop-gradient).
      temperature: τ.

    Returns:
      float32 scalar.
    """
    q = _f32(query)
    pos = _rowdot(q, _target(key)) / temperature
    neg = _with_queue(q, _target(queue)) / temperature
    return jnp.mean(_nll_of_positive(pos, neg))


def ir_nce(similarities: Array, temperature: float) -> jax.Array:
    """Instance discrimination with a memory bank, as the Ring code's IR baseline `NCE` computes it.

    `L = −mean_b( s_b0/τ − logsumexp_j(s_bj/τ) )` — a softmax cross-entropy with label 0 over the
    own bank entry and `K` uniformly drawn bank entries (draws may include the own index).

    The bank is sharded, so the method computes the rows `q · bank[cols]` device-locally and passes
    the similarities; it must stop the gradient into the bank itself (here only the similarities are
    seen, so gradient flows into whatever produced them).

    Args:
      similarities: `[B, 1 + K]`; column 0 = `q·bank[idx]` (own entry), columns 1..K =
        `q·bank[noise]`.
      temperature: τ.

    Returns:
      float32 scalar.
    """
    s = _f32(similarities) / temperature
    return jnp.mean(_nll_of_positive(s[:, 0], s[:, 1:]))


def sce(
    query: Array,
    key: Array,
    queue: Array,
    temperature: float,
    temperature_m: float,
    coeff: float,
    mask_self: bool = False,
) -> jax.Array:
    """Similarity Contrastive Estimation (SCE paper Eq. 8; official `sce.py` / eztorch `sce_loss`).

    ```
    p¹ = softmax([q·k, q·Qᵀ] / τ)                 # online distribution, Eq. 7
    s² = softmax([t_self, k·Qᵀ] / τ_m)            # target relations, Eq. 3
    w² = λ·onehot(0) + (1 − λ)·s²                 # Eq. 6
    L  = mean_b −Σ_j w²_bj log p¹_bj              # Eq. 8
    ```
    Official code (default): the target's self slot is a zero similarity, `t_self = 0`, so it keeps
    weight `1/Z` (≈ 1/K, negligible for large queues). `mask_self=True` gives the paper's indicator
    `1_{i≠k}` (`t_self = −inf`, weight 0).

    Args:
      query: `[B, D]` online embeddings z¹ (after projector/predictor), L2-normalised.
      key: `[B, D]` momentum embeddings z² of the weak view, L2-normalised (stop-gradient).
      queue: `[K, D]` memory buffer of momentum embeddings (stop-gradient).
      temperature: τ (online).
      temperature_m: τ_m (target, τ_m < τ).
      coeff: λ, the weight of the one-hot positive.
      mask_self: paper's masking of the target self slot instead of the code's zero logit.

    Returns:
      float32 scalar.
    """
    pos, neg, log_z, _, s_self, s_neg = _sce_distributions(
        query, key, queue, temperature, temperature_m, mask_self
    )
    w_pos = coeff + (1.0 - coeff) * s_self
    w_neg = (1.0 - coeff) * s_neg
    # −Σ_j w_j (l_j − log Z) with Σ_j w_j = 1.
    loss = log_z - w_pos * pos - jnp.sum(w_neg * neg, axis=-1)
    return jnp.mean(loss)


def sce_eq9(
    query: Array,
    key: Array,
    queue: Array,
    temperature: float,
    temperature_m: float,
    lam: float,
    mu: float,
    eta: float,
    mask_self: bool = False,
) -> jax.Array:
    """SCE as a weighted sum of its three parts (paper Eq. 9): `λ·L_InfoNCE + μ·L_ReSSL + η·L_Ceil`.

    With `μ = η = 1 − λ` this equals `sce(..., coeff=λ, mask_self=mask_self)` (Proposition 1); free
    weights give the paper's Tab. 3 ablation (e.g. `η = 0`). With `p¹` the online softmax over the
    `1 + K` columns (positive first), `s¹_j = softmax(q·Qᵀ/τ)_j` the online distribution
    renormalised over the queue (Eq. 2) and `s²` the target relations with the same self-slot
    convention as `sce` (`s²_self = 0` under `mask_self=True`, else the zero-logit slot's `1/Z`):
    ```
    L_InfoNCE = mean_b −log p¹_b0                                           # Eq. 1
    L_ReSSL   = mean_b −Σ_{j≠self} s²_bj log s¹_bj                          # Eq. 4 (sum over k ≠ i)
    L_Ceil    = mean_b −[ s²_b,self log p¹_b0 + (Σ_{j≠self} s²_bj) log(1 − p¹_b0) ]
    ```
    `L_Ceil` is the part of the relational cross-entropy that splits the mass between the positive
    and the negatives (the binary cross-entropy between the target's self mass and the online
    positive mass: it caps `p¹_0` at `s²_self`). Under the paper's indicator (`mask_self=True`)
    `s²_self = 0`, `Σ_{j≠self} s²_j = 1` and it is exactly the paper's
    `L_Ceil = −mean log(Σ_{j≠i} exp(z¹_i·z²_j/τ) / Σ_j exp(z¹_i·z²_j/τ))`, and `L_ReSSL` equals
    `ressl(query, key, queue, τ, τ_m)`. Under the code's convention the self slot's small target
    mass is the only difference, and it sits in `L_Ceil`, so the decomposition stays exact.

    Args: as `sce`, with `lam`, `mu`, `eta` the three free weights λ, μ, η.

    Returns:
      float32 scalar.
    """
    pos, neg, log_z, lse_neg, s_self, s_neg = _sce_distributions(
        query, key, queue, temperature, temperature_m, mask_self
    )
    log_p_pos = pos - log_z
    log_s1 = neg - lse_neg[:, None]
    log_p_neg_mass = lse_neg - log_z  # log(1 − p¹_0)
    l_infonce = -log_p_pos
    l_ressl = -jnp.sum(s_neg * log_s1, axis=-1)
    l_ceil = -(s_self * log_p_pos + jnp.sum(s_neg, axis=-1) * log_p_neg_mass)
    return jnp.mean(lam * l_infonce + mu * l_ressl + eta * l_ceil)


def ressl(
    query: Array, key: Array, queue: Array, temperature: float, temperature_m: float
) -> jax.Array:
    """ReSSL loss over a queue (eztorch `compute_ressl_loss`, solo-learn `ressl_loss_func`).

    No positive column: both distributions run over the queue only (paper Eqs. 2–4 with the
    batch replaced by the buffer, where there is no self entry to mask).
    ```
    p_k = softmax(k·Qᵀ / τ_m)                       # target relations (stop-gradient)
    L   = mean_b −Σ_j p_k,bj log softmax(q·Qᵀ / τ)_bj
    ```

    Args:
      query: `[B, D]` online embeddings (strong view), L2-normalised.
      key: `[B, D]` momentum embeddings (weak view), L2-normalised (stop-gradient).
      queue: `[K, D]` memory buffer (stop-gradient).
      temperature: τ (online), e.g. 0.1.
      temperature_m: τ_m (target), e.g. 0.04.

    Returns:
      float32 scalar.
    """
    queue = _target(queue)
    online = _with_queue(_f32(query), queue) / temperature
    relations = jax.nn.softmax(_with_queue(_target(key), queue) / temperature_m, axis=-1)
    return jnp.mean(cross_entropy(online, relations))


def jcl(query: Array, keys: Array, queue: Array, temperature: float, lam: float) -> jax.Array:
    """Joint Contrastive Learning (JCL paper Eq. 8; official `MoCoUnlimitedKeysDefault`).

    With `M'` positive keys per query, `μ = mean_m k_m` (not re-normalised) and the biased
    covariance `Σ = (1/M') Σ_m (k_m − μ)(k_m − μ)ᵀ`:
    ```
    v     = λ/(2τ²) · qᵀΣq,   qᵀΣq = (1/M') Σ_m ((k_m − μ)·q)²     # no [B, D, D] matrix
    l_pos = q·μ/τ + v
    L     = mean_b[ CE([l_pos, q·Qᵀ/τ], label 0) + v ]
          = mean_b[ −q·μ/τ + log(exp(q·μ/τ + v) + Σ_j exp(q·Q_j/τ)) ]
    ```
    The official code adds the `v` term separately ("jcl_loss"), which cancels the covariance term
    in the numerator, leaving it only inside the log-sum-exp. λ is the (ramped) `ratio`; the code's
    `Sigma·ratio/τ` followed by `/τ` on the logits gives the `λ/(2τ²)` scale.

    Args:
      query: `[B, D]` online embeddings, L2-normalised (gradient flows).
      keys: `[M', B, D]` momentum embeddings of the `M'` key crops, crop-major, L2-normalised
        (stop-gradient).
      queue: `[K, D]` negatives — mean keys in the official code, norm < 1 (stop-gradient).
      temperature: τ.
      lam: λ (may be a traced scalar from a schedule).

    Returns:
      float32 scalar.
    """
    q = _f32(query)
    keys = _target(keys)
    mean_key = jnp.mean(keys, axis=0)
    centred_proj = jnp.einsum("mbd,bd->mb", keys - mean_key[None], q)  # (k_m − μ)·q
    q_sigma_q = jnp.mean(jnp.square(centred_proj), axis=0)
    var_term = lam / (2.0 * temperature**2) * q_sigma_q
    pos = _rowdot(q, mean_key) / temperature + var_term
    neg = _with_queue(q, _target(queue)) / temperature
    return jnp.mean(_nll_of_positive(pos, neg) + var_term)


def margin_nce_from_similarities(
    positive_sim: Array,
    negative_sims: Array,
    temperature: float,
    margin: float,
    negative_mask: Array | None = None,
) -> jax.Array:
    """MarginNCE on precomputed cosines (InterCLR's inter branch with a sharded bank: the method
    computes `q·bank[rows]` device-locally, `memory.row_similarities`).

    `L = mean_b −log( e^{(p_b − m)/τ} / (e^{(p_b − m)/τ} + Σ_n e^{s_bn/τ}) )`: MarginNCE
    (InterCLR, Xie et al. IJCV 2022, Eq. 3; mmselfsup 0.x `interclr_moco.py`), a cosine margin m on
    the positive only. The official inter branch uses m = −0.5 ("less stringent"); m = 0 is InfoNCE.

    Args:
      positive_sim: `[B]` cos(q, p).
      negative_sims: `[B, K]` cos(q, n).
      temperature: τ.
      margin: m, subtracted from the positive cosine (the code's inter m = −0.5 ADDS 0.5).
      negative_mask: optional `[B, K]` bool, False = not a negative (a draw from a pool with fewer
        than K eligible rows); such columns are left out of the sum.

    Returns:
      float32 scalar.
    """
    pos = (_f32(positive_sim) - margin) / temperature
    neg = _f32(negative_sims) / temperature
    if negative_mask is not None:
        neg = jnp.where(negative_mask, neg, -jnp.inf)
    return jnp.mean(_nll_of_positive(pos, neg))


# --------------------------------------------------------------------------------------------------
# CMC (Tian et al., ECCV 2020; HobbitLong/CMC `NCE/NCEAverage.py`, `NCE/NCECriterion.py`)
# --------------------------------------------------------------------------------------------------


def cmc_partition(scores: Array, num_data: int) -> jax.Array:
    """CMC's Monte-Carlo estimate of the NCE partition function, `Z = mean(exp(scores)) · N`.

    `NCEAverage` computes it once per view at the first iteration (`out.mean() * outputSize`, over
    all `B × (K+1)` entries) and keeps it as a constant (a Python float): no gradient flows here.

    Args:
      scores: `[B, K+1]` `memory[idx]·feat/τ` (positive in column 0).
      num_data: N, the number of training examples (rows of the memory).

    Returns:
      float32 scalar Z.
    """
    s = jax.lax.stop_gradient(_f32(scores))
    return jnp.mean(jnp.exp(s)) * num_data


def cmc_nce(scores: Array, z: Array, num_data: int, eps: float = 1e-7) -> jax.Array:
    """CMC's binary NCE loss (`NCECriterion` applied to `NCEAverage`'s output in NCE mode).

    With `P = exp(scores)/Z`, `K` = the width of `scores` − 1 and the noise term `K·Pn = K/N`:
    `L = −[Σ_b log(P_b0/(P_b0 + K/N + eps)) + Σ_b Σ_{j≥1} log((K/N)/(P_bj + K/N + eps))] / B`
    (negatives summed, the total divided by B only, as the code's `.sum(0) / bsz`).

    Args:
      scores: `[B, K+1]` `memory[idx]·feat/τ`; column 0 is the own (positive) entry.
      z: the partition constant (`cmc_partition` at the first step), a scalar; no gradient.
      num_data: N, the number of rows of the memory (Pn = 1/N).
      eps: the code's 1e-7.

    Returns:
      float32 scalar.
    """
    s = _f32(scores)
    p = jnp.exp(s) / jax.lax.stop_gradient(_f32(z))
    noise = (s.shape[1] - 1) / float(num_data)
    log_d1 = jnp.log(p[:, 0] / (p[:, 0] + noise + eps))
    log_d0 = jnp.log(noise / (p[:, 1:] + noise + eps))
    return -(jnp.sum(log_d1) + jnp.sum(log_d0)) / s.shape[0]


def cmc_softmax(scores: Array) -> jax.Array:
    """CMC's softmax variant (`NCESoftmaxLoss`; PyContrast's only loss): `CE(scores, 0)` averaged
    over the batch, `scores` `[B, K+1]` already divided by τ, positive in column 0."""
    return ir_nce(scores, 1.0)


# --------------------------------------------------------------------------------------------------
# Ring / conditional negative sampling (Wu et al., ICLR 2021; mhw32/contrastive-ring-public)
# --------------------------------------------------------------------------------------------------


def ring_positions(num_rows: int, outer: Array, inner: Array) -> tuple[Array, Array]:
    """The ring's positions `[start, stop)` in each anchor's similarities sorted DESCENDING.

    The code's rule (`thres_outer`, `thres_inner`, `dynamic_inner=True`): the outer set is the
    `stop = int(outer·N)` most similar rows, its closest `start = int(inner·stop)` are cut, so the
    ring is positions `start … stop − 1`. In the paper's percentiles of the similarity (CNCE Eq. 6;
    `ring_percentiles` in tests/methods/references.py): w_l = 100(1 − outer), w_u = 100(1 − inner·outer). `inner = 0` is
    the ball (the whole outer set). Python floats give Python ints (static shapes); traced fractions
    (an annealed `outer`) give int32 scalars, computed in float32 (the code: float64).
    """
    if isinstance(outer, (int, float)) and isinstance(inner, (int, float)):
        stop = int(outer * num_rows)
        return int(inner * stop), stop
    stop = jnp.floor(jnp.asarray(outer, jnp.float32) * num_rows).astype(jnp.int32)
    start = jnp.floor(jnp.asarray(inner, jnp.float32) * stop).astype(jnp.int32)
    return start, stop


def ring_logits(
    query: Array, queue: Array, temperature: float, outer: Array, inner: Array, max_outer: float
) -> tuple[jax.Array, jax.Array]:
    """MoCoRing's ring of each query over a queue: (logits `[B, M]` sorted descending, mask `[B, M]`).

    `all = q·Qᵀ/τ` sorted descending by `lax.top_k` with `M = int(max_outer·K)` (the largest outer
    set the schedule reaches, static); columns outside `ring_positions(K, outer, inner)` are masked
    (so `outer`/`inner` may be traced). query `[B, D]` L2-normalised, queue `[K, D]` (stop-gradient).
    """
    num_rows = queue.shape[0]
    width = max(1, int(max_outer * num_rows))
    sims = _with_queue(_f32(query), _target(queue)) / temperature
    top, _ = jax.lax.top_k(sims, width)
    start, stop = ring_positions(num_rows, outer, inner)
    position = jnp.arange(width)
    return top, jnp.broadcast_to((position >= start) & (position < stop), top.shape)


def moco_ring_with_logits(
    query: Array,
    key: Array,
    queue: Array,
    temperature: float,
    outer: Array,
    inner: Array,
    max_outer: float | None = None,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """MoCoRing (CNCE with a MoCo queue; the code's `MoCoRing.get_loss`) and the ring it used, from
    one top-k.

    ```
    q, k = normalize(query), normalize(key);  pos = q·k/τ
    ring = sort_desc(q·Qᵀ/τ)[:, int(inner·int(outer·K)) : int(outer·K)]     # ALL ring elements
    L    = −mean_b( pos − logsumexp([pos, ring]) )
    ```
    `inner = 0` is the ball lesion (`MoCoBall`): the whole outer set. With K = 65,536 and
    0.1 / 0.1 the ring holds 5,898 entries.

    Args:
      query: `[B, D]` online embeddings (normalised here; gradient flows).
      key: `[B, D]` momentum embeddings (normalised here; stop-gradient).
      queue: `[K, D]` L2-normalised negatives (stop-gradient).
      temperature: τ.
      outer, inner: the code's fractions (floats, or traced scalars with `max_outer` given).
      max_outer: static bound on `outer` (the top-k width); default `outer` itself.

    Returns:
      (loss float32 scalar, logits `[B, M]` sorted descending, mask `[B, M]`): `ring_logits` of the
      normalised query (the logits carry the query's gradient).
    """
    q = l2_normalize(_f32(query))
    pos = _rowdot(q, l2_normalize(_target(key))) / temperature
    ring, mask = ring_logits(
        q, queue, temperature, outer, inner, outer if max_outer is None else max_outer
    )
    return jnp.mean(_nll_of_positive(pos, jnp.where(mask, ring, -jnp.inf))), ring, mask
