"""Every loss against an independent float64 numpy formula written in this file."""

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ssl_jax.methods import losses as _losses

# Jitted once per shape: op-by-op dispatch compiles every primitive and is slower on CPU.
losses = SimpleNamespace(
    info_nce=jax.jit(_losses.info_nce),
    ir_nce=jax.jit(_losses.ir_nce),
    sce=jax.jit(_losses.sce, static_argnames="mask_self"),
    sce_eq9=jax.jit(_losses.sce_eq9, static_argnames="mask_self"),
    ressl=jax.jit(_losses.ressl),
    jcl=jax.jit(_losses.jcl),
    cross_entropy=jax.jit(_losses.cross_entropy),
    l2_normalize=jax.jit(_losses.l2_normalize),
    margin_nce_from_similarities=jax.jit(_losses.margin_nce_from_similarities),
    cmc_partition=jax.jit(_losses.cmc_partition, static_argnames="num_data"),
    cmc_nce=jax.jit(_losses.cmc_nce, static_argnames=("num_data", "eps")),
    cmc_softmax=jax.jit(_losses.cmc_softmax),
)

RTOL = 1e-5
ATOL = 1e-5


# ------------------------------------------------------------------------------------------------
# numpy references (float64, concat-then-softmax, exactly as the official PyTorch code reads)
# ------------------------------------------------------------------------------------------------


def _unit(rng, *shape):
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _log_softmax(x):
    m = x.max(axis=1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))


def _softmax(x):
    return np.exp(_log_softmax(x))


def np_info_nce(q, k, queue, t):
    logits = np.concatenate([(q * k).sum(1, keepdims=True), q @ queue.T], axis=1) / t
    return -_log_softmax(logits)[:, 0].mean()


def np_ir_nce(sims, t):
    s = sims / t
    lse = np.log(np.exp(s).sum(1))
    return -(s[:, 0] - lse).mean()


def np_sce(q, k, queue, t, tm, lam, mask_self):
    sim_q = np.concatenate([(q * k).sum(1, keepdims=True), q @ queue.T], axis=1)
    self_col = np.full((q.shape[0], 1), -np.inf if mask_self else 0.0)
    sim_k = np.concatenate([self_col, k @ queue.T], axis=1)
    p_k = _softmax(sim_k / tm)
    onehot = np.zeros_like(p_k)
    onehot[:, 0] = 1.0
    w = lam * onehot + (1 - lam) * p_k
    w = w / w.sum(1, keepdims=True)
    return -(w * _log_softmax(sim_q / t)).sum(1).mean()


def np_ressl(q, k, queue, t, tm):
    p_k = _softmax(k @ queue.T / tm)
    return -(p_k * _log_softmax(q @ queue.T / t)).sum(1).mean()


def np_paper_ceil(q, k, queue, t):
    """Paper: L_Ceil = −mean log(Σ_{j≠i} exp(z¹_i·z²_j/τ) / Σ_j exp(z¹_i·z²_j/τ))."""
    e_pos = np.exp((q * k).sum(1) / t)
    e_neg = np.exp(q @ queue.T / t).sum(1)
    return -np.log(e_neg / (e_pos + e_neg)).mean()


def np_jcl(q, keys, queue, t, lam):
    m = keys.shape[0]
    mu = keys.mean(0)  # (B, D)
    c = keys - mu[None]
    sigma = np.einsum("mbd,mbe->bde", c, c) / m  # full per-sample covariance, biased
    sigma_p = sigma * lam / t
    l_pos = np.einsum("bd,bd->b", q, mu + 0.5 * np.einsum("bde,be->bd", sigma_p, q))
    logits = np.concatenate([l_pos[:, None], q @ queue.T], axis=1) / t
    ce = -_log_softmax(logits)[:, 0].mean()
    jcl_term = (0.5 * np.einsum("bd,bde,be->b", q, sigma_p, q)).mean() / t
    return ce + jcl_term


# ------------------------------------------------------------------------------------------------
# fixtures
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def batch():
    rng = np.random.default_rng(0)
    b, d, k = 6, 16, 32
    return dict(q=_unit(rng, b, d), k=_unit(rng, b, d), queue=_unit(rng, k, d))


def _j(*xs):
    return [jnp.asarray(x, jnp.float32) for x in xs]


# ------------------------------------------------------------------------------------------------
# helpers
# ------------------------------------------------------------------------------------------------


def test_l2_normalize():
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    y = np.asarray(losses.l2_normalize(jnp.asarray(x, jnp.float32)))
    np.testing.assert_allclose(y, [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)
    assert losses.l2_normalize(jnp.ones((2, 3), jnp.bfloat16)).dtype == jnp.bfloat16


def test_cross_entropy():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((4, 5))
    targets = _softmax(rng.standard_normal((4, 5)))
    ref = -(targets * _log_softmax(logits)).sum(1)
    np.testing.assert_allclose(losses.cross_entropy(*_j(logits, targets)), ref, rtol=RTOL)


# ------------------------------------------------------------------------------------------------
# losses vs numpy
# ------------------------------------------------------------------------------------------------


def test_info_nce(batch):
    q, k, queue = batch["q"], batch["k"], batch["queue"]
    got = losses.info_nce(*_j(q, k, queue), 0.2)
    np.testing.assert_allclose(got, np_info_nce(q, k, queue, 0.2), rtol=RTOL, atol=ATOL)


def test_ir_nce():
    rng = np.random.default_rng(2)
    b, d, n, k = 5, 8, 40, 12
    q = _unit(rng, b, d)
    bank = _unit(rng, n, d)
    idx = rng.integers(0, n, b)
    cols = np.concatenate([idx[:, None], rng.integers(0, n, (b, k))], axis=1)
    sims = np.einsum("bd,bkd->bk", q, bank[cols])
    got = losses.ir_nce(jnp.asarray(sims, jnp.float32), 0.07)
    np.testing.assert_allclose(got, np_ir_nce(sims, 0.07), rtol=RTOL, atol=ATOL)
    # Same thing as InfoNCE with the own bank entry as key and the drawn entries as queue (b = 1).
    one = losses.info_nce(*_j(q[:1], bank[idx[:1]], bank[cols[0, 1:]]), 0.07)
    np.testing.assert_allclose(losses.ir_nce(sims[:1], 0.07), one, rtol=RTOL)


@pytest.mark.parametrize("mask_self", [False, True])
@pytest.mark.parametrize("lam", [0.0, 0.5, 1.0])
def test_sce(batch, lam, mask_self):
    q, k, queue = batch["q"], batch["k"], batch["queue"]
    got = losses.sce(*_j(q, k, queue), 0.1, 0.05, lam, mask_self=mask_self)
    ref = np_sce(q, k, queue, 0.1, 0.05, lam, mask_self)
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


def test_sce_self_slot_carries_weight_with_tiny_queue():
    """K = 2 and a large τ_m: the zero-logit self slot gets ~1/3 of the target mass."""
    rng = np.random.default_rng(3)
    q, k, queue = _unit(rng, 4, 8), _unit(rng, 4, 8), _unit(rng, 2, 8)
    code = losses.sce(*_j(q, k, queue), 0.1, 1.0, 0.5)
    paper = losses.sce(*_j(q, k, queue), 0.1, 1.0, 0.5, mask_self=True)
    np.testing.assert_allclose(code, np_sce(q, k, queue, 0.1, 1.0, 0.5, False), rtol=RTOL)
    np.testing.assert_allclose(paper, np_sce(q, k, queue, 0.1, 1.0, 0.5, True), rtol=RTOL)
    assert abs(float(code) - float(paper)) > 0.05


@pytest.mark.parametrize("mask_self", [False, True])
@pytest.mark.parametrize("lam", [0.0, 0.3, 0.5, 1.0])
def test_sce_eq9_equals_sce(batch, lam, mask_self):
    q, k, queue = _j(batch["q"], batch["k"], batch["queue"][:3])  # tiny K: the self slot matters
    for tm in (0.05, 1.0):
        got = losses.sce_eq9(q, k, queue, 0.1, tm, lam, 1 - lam, 1 - lam, mask_self=mask_self)
        ref = losses.sce(q, k, queue, 0.1, tm, lam, mask_self=mask_self)
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


def test_sce_eq9_parts_under_paper_indicator(batch):
    """mask_self=True: each part is the paper's formula (Eq. 1, Eq. 4 over the queue, L_Ceil)."""
    q, k, queue = batch["q"], batch["k"], batch["queue"]
    args = (*_j(q, k, queue), 0.1, 0.05)
    part = lambda lam, mu, eta: losses.sce_eq9(*args, lam, mu, eta, mask_self=True)
    np.testing.assert_allclose(part(1, 0, 0), np_info_nce(q, k, queue, 0.1), rtol=RTOL)
    np.testing.assert_allclose(part(0, 1, 0), np_ressl(q, k, queue, 0.1, 0.05), rtol=RTOL)
    np.testing.assert_allclose(part(0, 0, 1), np_paper_ceil(q, k, queue, 0.1), rtol=RTOL)
    # Linear in the weights (η = 0 is the paper's Tab. 3 ablation).
    np.testing.assert_allclose(
        part(0.5, 0.5, 0.0), 0.5 * part(1, 0, 0) + 0.5 * part(0, 1, 0), rtol=RTOL
    )


def test_sce_eq9_parts_under_code_convention():
    """Default self slot (logit 0): L_ReSSL is Eq. 4 with the unrenormalised s², L_Ceil a BCE."""
    rng = np.random.default_rng(4)
    q, k, queue = _unit(rng, 4, 8), _unit(rng, 4, 8), _unit(rng, 3, 8)
    t, tm = 0.1, 0.5
    sim_k = np.concatenate([np.zeros((4, 1)), k @ queue.T], axis=1)
    s2 = _softmax(sim_k / tm)
    logits = np.concatenate([(q * k).sum(1, keepdims=True), q @ queue.T], axis=1) / t
    p = _softmax(logits)
    s1 = _softmax(q @ queue.T / t)
    ressl_ref = -(s2[:, 1:] * np.log(s1)).sum(1).mean()
    ceil_ref = -(s2[:, 0] * np.log(p[:, 0]) + s2[:, 1:].sum(1) * np.log(1 - p[:, 0])).mean()
    args = (*_j(q, k, queue), t, tm)
    np.testing.assert_allclose(losses.sce_eq9(*args, 0, 1, 0), ressl_ref, rtol=RTOL)
    np.testing.assert_allclose(losses.sce_eq9(*args, 0, 0, 1), ceil_ref, rtol=RTOL)


def test_ressl(batch):
    q, k, queue = batch["q"], batch["k"], batch["queue"]
    got = losses.ressl(*_j(q, k, queue), 0.1, 0.04)
    np.testing.assert_allclose(got, np_ressl(q, k, queue, 0.1, 0.04), rtol=RTOL, atol=ATOL)


def _jcl_inputs(seed=5, m=4, b=5, d=12, kq=20):
    rng = np.random.default_rng(seed)
    q = _unit(rng, b, d)
    # Keys clustered around a per-sample centre, as augmented views are.
    centre = _unit(rng, b, d)
    keys = np.stack([centre + 0.3 * rng.standard_normal((b, d)) for _ in range(m)])
    keys /= np.linalg.norm(keys, axis=-1, keepdims=True)
    queue = 0.9 * _unit(rng, kq, d)  # mean keys: norm < 1
    return q, keys, queue


@pytest.mark.parametrize("lam", [0.0, 2.0, 4.0])
def test_jcl(lam):
    q, keys, queue = _jcl_inputs()
    got = losses.jcl(*_j(q, keys, queue), 0.2, lam)
    np.testing.assert_allclose(got, np_jcl(q, keys, queue, 0.2, lam), rtol=RTOL, atol=ATOL)
    if lam == 0.0:  # no covariance: InfoNCE with the mean key as positive
        ref = np_info_nce(q, keys.mean(0), queue, 0.2)
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)


def np_margin_nce(q, p, negatives, t, m):
    """The official inter branch: pos_logit = p·q − m, CE([pos, q·negᵀ] / τ, label 0)."""
    pos = (q * p).sum(1, keepdims=True) - m
    neg = np.einsum("bd,bkd->bk", q, negatives)
    return -_log_softmax(np.concatenate([pos, neg], axis=1) / t)[:, 0].mean()


def _margin_nce(q, p, negatives, t, m, mask=None):
    """`losses.margin_nce_from_similarities` on q·p and q·negatives (as InterCLR's inter branch,
    whose `memory.row_similarities` reads those cosines from the bank)."""
    sims = np.einsum("bd,bkd->bk", q, negatives)
    mask = None if mask is None else jnp.asarray(mask)
    return losses.margin_nce_from_similarities(*_j((q * p).sum(1), sims), t, m, mask)


@pytest.mark.parametrize("margin", [-0.5, 0.0, 0.5])
def test_margin_nce(margin):
    rng = np.random.default_rng(11)
    q, p, neg = _unit(rng, 6, 8), _unit(rng, 6, 8), _unit(rng, 6, 10, 8)
    got = _margin_nce(q, p, neg, 0.2, margin)
    np.testing.assert_allclose(got, np_margin_nce(q, p, neg, 0.2, margin), rtol=RTOL, atol=ATOL)
    # the sign: m = −0.5 adds 0.5 to the positive cosine, so the loss is lower than with m = 0
    if margin == -0.5:
        assert float(got) < float(_margin_nce(q, p, neg, 0.2, 0.0))
    if margin == 0.0:  # no margin: InfoNCE with per-example negatives
        ref = np.mean([np_info_nce(q[b : b + 1], p[b : b + 1], neg[b], 0.2) for b in range(6)])
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)
    # with masked columns: the same as dropping those negatives
    mask = np.ones((6, 10), bool)
    mask[:, 7:] = False
    got = _margin_nce(q, p, neg, 0.2, margin, mask)
    ref = np_margin_nce(q, p, neg[:, :7], 0.2, margin)
    np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL)
    # gradients w.r.t. the cosines: (softmax − onehot(0)) / (τ B), none into masked columns
    pos, sims = (q * p).sum(1), np.einsum("bd,bkd->bk", q, neg)
    gp, gs = jax.grad(_losses.margin_nce_from_similarities, argnums=(0, 1))(
        *_j(pos, sims), 0.2, margin, jnp.asarray(mask)
    )
    logits = np.concatenate([pos[:, None] - margin, sims[:, :7]], axis=1) / 0.2
    soft = np.exp(_log_softmax(logits))
    np.testing.assert_allclose(gp, (soft[:, 0] - 1) / (0.2 * 6), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(gs[:, :7], soft[:, 1:] / (0.2 * 6), rtol=RTOL, atol=ATOL)
    assert not np.any(np.asarray(gs[:, 7:]))


def test_jcl_gradients():
    q, keys, queue = _jcl_inputs(seed=6, m=3, b=3, d=5, kq=7)
    t, lam = 0.2, 2.0
    gq, gk, gqueue = jax.grad(losses.jcl, argnums=(0, 1, 2))(*_j(q, keys, queue), t, lam)
    assert not np.any(np.asarray(gk)) and not np.any(np.asarray(gqueue))
    # Central finite differences of the float64 numpy reference.
    eps = 1e-6
    fd = np.zeros_like(q)
    for idx in np.ndindex(q.shape):
        dq = np.zeros_like(q)
        dq[idx] = eps
        fd[idx] = (np_jcl(q + dq, keys, queue, t, lam) - np_jcl(q - dq, keys, queue, t, lam)) / (
            2 * eps
        )
    np.testing.assert_allclose(gq, fd, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "fn",
    [
        lambda q, k, Q: losses.info_nce(q, k, Q, 0.2),
        lambda q, k, Q: losses.sce(q, k, Q, 0.1, 0.05, 0.5),
        lambda q, k, Q: losses.sce(q, k, Q, 0.1, 0.05, 0.5, mask_self=True),
        lambda q, k, Q: losses.sce_eq9(q, k, Q, 0.1, 0.05, 0.5, 0.3, 0.7),
        lambda q, k, Q: losses.ressl(q, k, Q, 0.1, 0.04),
    ],
    ids=["info_nce", "sce", "sce_masked", "sce_eq9", "ressl"],
)
def test_gradient_only_through_query(batch, fn):
    gq, gk, gqueue = jax.grad(fn, argnums=(0, 1, 2))(*_j(batch["q"], batch["k"], batch["queue"]))
    assert np.all(np.isfinite(gq)) and np.any(np.asarray(gq))
    assert not np.any(np.asarray(gk)) and not np.any(np.asarray(gqueue))


def test_bfloat16_inputs_computed_in_float32(batch):
    """bf16 activations: a float32 loss, equal to the float32 loss on the same rounded values."""
    bf = [jnp.asarray(x, jnp.bfloat16) for x in (batch["q"], batch["k"], batch["queue"])]
    up = [x.astype(jnp.float32) for x in bf]
    keys = jnp.stack([bf[1], bf[0]])
    sims = bf[0] @ bf[2][:8].T  # q·bank rows arrive in the activations' dtype
    pairs = {
        "info_nce": (losses.info_nce, (0.2,)),
        "sce": (losses.sce, (0.1, 0.05, 0.5)),
        "sce_eq9": (losses.sce_eq9, (0.1, 0.05, 0.5, 0.5, 0.5)),
        "ressl": (losses.ressl, (0.1, 0.04)),
    }
    results = {name: (fn(*bf, *hp), fn(*up, *hp)) for name, (fn, hp) in pairs.items()}
    results["jcl"] = (
        losses.jcl(bf[0], keys, bf[2], 0.2, 2.0),
        losses.jcl(up[0], keys.astype(jnp.float32), up[2], 0.2, 2.0),
    )
    results["ir_nce"] = (losses.ir_nce(sims, 0.07), losses.ir_nce(sims.astype(jnp.float32), 0.07))
    for name, (got, ref) in results.items():
        assert got.dtype == jnp.float32, name
        np.testing.assert_allclose(got, ref, rtol=RTOL, atol=ATOL, err_msg=name)


# ------------------------------------------------------------------------------------------------
# CMC: NCEAverage (NCE mode: exp(out/T)/Z, Z = mean·N at the first call) + NCECriterion, and
# NCESoftmaxLoss (CrossEntropyLoss(x.squeeze(), 0)), transcribed line by line.
# ------------------------------------------------------------------------------------------------


def np_nce_average(out, n_data):
    """`NCEAverage.forward` in NCE mode on `out = bmm(memory[idx], feat)/T`: returns (P, Z)."""
    e = np.exp(out)
    z = e.mean() * n_data
    return e / z, z


def np_nce_criterion(x, n_data, eps=1e-7):
    bsz = x.shape[0]
    m = x.shape[1] - 1
    pn = 1 / float(n_data)
    p_pos = x[:, 0]
    log_d1 = np.log(p_pos / (p_pos + m * pn + eps))
    p_neg = x[:, 1:]
    log_d0 = np.log(np.full_like(p_neg, m * pn) / (p_neg + m * pn + eps))
    return -(log_d1.sum(0) + log_d0.reshape(-1, 1).sum(0)[0]) / bsz


def _cmc_scores(rng, b=6, k=9, d=8, n=50, t=0.07):
    feat = _unit(rng, b, d)
    memory = rng.uniform(-1, 1, (n, d)) / np.sqrt(d / 3)  # NCEAverage's init: not normalised
    idx = rng.integers(0, n, (b, k + 1))
    return np.einsum("bkd,bd->bk", memory[idx], feat) / t, n


def test_cmc_partition_and_nce():
    rng = np.random.default_rng(11)
    out, n = _cmc_scores(rng)
    x, z = np_nce_average(out, n)
    got_z = float(losses.cmc_partition(jnp.asarray(out, jnp.float32), num_data=n))
    np.testing.assert_allclose(got_z, z, rtol=1e-5)
    got = float(losses.cmc_nce(jnp.asarray(out, jnp.float32), got_z, num_data=n))
    np.testing.assert_allclose(got, np_nce_criterion(x, n), rtol=1e-5)
    # a later step keeps the first step's Z: the loss at another Z is the formula at that Z
    later, _ = _cmc_scores(rng)
    got = float(losses.cmc_nce(jnp.asarray(later, jnp.float32), z, num_data=n))
    np.testing.assert_allclose(got, np_nce_criterion(np.exp(later) / z, n), rtol=1e-5)


def test_cmc_nce_gradient_skips_z():
    rng = np.random.default_rng(12)
    out, n = _cmc_scores(rng)
    s = jnp.asarray(out, jnp.float32)
    g = jax.grad(lambda z: _losses.cmc_nce(s, z, n))(jnp.float32(3.0))
    assert float(g) == 0.0
    g = jax.grad(lambda s: _losses.cmc_partition(s, n))(s)
    assert float(jnp.abs(g).max()) == 0.0


def test_cmc_softmax():
    rng = np.random.default_rng(13)
    out, _ = _cmc_scores(rng)
    logp = _log_softmax(out)
    np.testing.assert_allclose(
        float(losses.cmc_softmax(jnp.asarray(out, jnp.float32))), -logp[:, 0].mean(), rtol=1e-5
    )
