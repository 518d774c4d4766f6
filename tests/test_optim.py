"""Optimisers vs numpy re-implementations of the PyTorch updates; lr and EMA schedules."""

import math

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import pytest

from ssl_jax import optim

STEPS_PER_EPOCH = 2
TOTAL_STEPS = 6
BATCH = 512  # linear scaling: peak = base_lr * 2


def _config(**overrides):
    cfg = {
        "name": "sgd",
        "base_lr": 0.1,
        "lr_scaling": "linear",
        "momentum": 0.9,
        "nesterov": False,
        "weight_decay": 1e-2,
        "schedule": "cosine",
        "warmup_epochs": 1.0,  # 2 warm-up steps: lr 0, then peak / 2, then cosine
        "decay_epochs": (),
        "decay_factor": 0.1,
        "final_lr": 0.0,
        "trust_coefficient": 1e-3,
        "exclude_1d": None,
    }
    cfg.update(overrides)
    return ml_collections.ConfigDict(cfg)


def _expected_lrs(n):
    """Warm-up 2 steps then cosine over the remaining 4, peak 0.2 (written out independently)."""
    peak, warm, total = 0.2, 2, TOTAL_STEPS
    return [
        peak * t / warm
        if t < warm
        else peak * 0.5 * (1 + math.cos(math.pi * (t - warm) / (total - warm)))
        for t in range(n)
    ]


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    params = {
        "conv": {"kernel": rng.normal(size=(3, 3, 2, 4))},
        "dense": {"kernel": rng.normal(size=(5, 3)), "bias": rng.normal(size=(3,))},
        "bn": {"scale": rng.uniform(0.5, 1.5, size=(4,))},
        "zero": {"kernel": np.zeros((2, 2))},  # LARS: ||p|| = 0 -> ratio 1
    }
    params = jax.tree.map(lambda a: a.astype(np.float32), params)
    grads = [
        jax.tree.map(lambda a: rng.normal(size=a.shape).astype(np.float32), params)
        for _ in range(3)
    ]
    return params, grads


def _torch_sgd(params, grads, lrs, *, momentum, wd, nesterov, exclude_1d):
    """torch.optim.SGD (dampening 0) with coupled weight decay; optional 1-D exclusion."""
    p = jax.tree.map(lambda a: a.astype(np.float64), params)
    buf = jax.tree.map(np.zeros_like, p)
    for g, lr in zip(grads, lrs):

        def step(p_, g_, b_, lr=lr):
            d = g_.astype(np.float64)
            if not (exclude_1d and p_.ndim == 1):
                d = d + wd * p_
            b_ = momentum * b_ + d
            d = d + momentum * b_ if nesterov else b_
            return p_ - lr * d, b_

        out = jax.tree.map(step, p, g, buf)
        p = jax.tree.map(lambda o: o[0], out, is_leaf=lambda x: isinstance(x, tuple))
        buf = jax.tree.map(lambda o: o[1], out, is_leaf=lambda x: isinstance(x, tuple))
    return p


def _moco_lars(params, grads, lrs, *, momentum, wd, eta, exclude_1d):
    """MoCo v3 / SCE `LARS.step` in numpy."""
    p = jax.tree.map(lambda a: a.astype(np.float64), params)
    buf = jax.tree.map(np.zeros_like, p)
    for g, lr in zip(grads, lrs):

        def step(p_, g_, b_, lr=lr):
            d = g_.astype(np.float64)
            if p_.ndim != 1 or not exclude_1d:
                d = d + wd * p_
                pn, dn = np.linalg.norm(p_), np.linalg.norm(d)
                q = eta * pn / dn if (pn > 0 and dn > 0) else 1.0
                d = d * q
            b_ = momentum * b_ + d
            return p_ - lr * b_, b_

        out = jax.tree.map(step, p, g, buf)
        p = jax.tree.map(lambda o: o[0], out, is_leaf=lambda x: isinstance(x, tuple))
        buf = jax.tree.map(lambda o: o[1], out, is_leaf=lambda x: isinstance(x, tuple))
    return p


def _run(cfg, params, grads):
    tx, schedule = optim.make_optimizer(
        cfg, total_steps=TOTAL_STEPS, steps_per_epoch=STEPS_PER_EPOCH, global_batch_size=BATCH
    )
    state = tx.init(params)
    update = tx.update  # eager: the small ops' executables are shared by all configs
    p = params
    for g in grads:
        updates, state = update(g, state, p)
        p = optax.apply_updates(p, updates)
    return p, schedule


def _assert_tree_close(a, b, rtol=1e-5, atol=1e-6):
    jax.tree.map(lambda x, y: np.testing.assert_allclose(x, y, rtol=rtol, atol=atol), a, b)


@pytest.mark.parametrize("nesterov", [False, True])
@pytest.mark.parametrize("exclude_1d", [None, True])
def test_sgd_matches_torch_update(nesterov, exclude_1d):
    params, grads = _problem()
    cfg = _config(nesterov=nesterov, exclude_1d=exclude_1d)
    ours, schedule = _run(cfg, params, grads)
    lrs = _expected_lrs(3)
    np.testing.assert_allclose([schedule(t) for t in range(3)], lrs, rtol=1e-6)
    ref = _torch_sgd(
        params, grads, lrs, momentum=0.9, wd=1e-2, nesterov=nesterov, exclude_1d=bool(exclude_1d)
    )
    _assert_tree_close(ours, ref)
    # step 0 has lr 0: nothing moves, but the momentum buffer holds g0 (lr applied after the trace)
    assert lrs[0] == 0.0


@pytest.mark.parametrize("exclude_1d", [None, False])
def test_lars_matches_moco_v3(exclude_1d):
    params, grads = _problem(1)
    cfg = _config(name="lars", weight_decay=1e-4, trust_coefficient=1e-3, exclude_1d=exclude_1d)
    ours, _ = _run(cfg, params, grads)
    ref = _moco_lars(
        params,
        grads,
        _expected_lrs(3),
        momentum=0.9,
        wd=1e-4,
        eta=1e-3,
        exclude_1d=exclude_1d is None,  # LARS default: exclude 1-D params
    )
    _assert_tree_close(ours, ref)


def test_one_dim_exclusion():
    params, grads = _problem(2)
    # LARS default: 1-D params (bias, BN scale) follow plain momentum SGD without weight decay
    lars, _ = _run(_config(name="lars", weight_decay=0.5), params, grads)
    plain = _torch_sgd(
        params, grads, _expected_lrs(3), momentum=0.9, wd=0.0, nesterov=False, exclude_1d=True
    )
    for path in (("dense", "bias"), ("bn", "scale")):
        np.testing.assert_allclose(lars[path[0]][path[1]], plain[path[0]][path[1]], rtol=1e-5)
    assert not np.allclose(lars["dense"]["kernel"], plain["dense"]["kernel"])
    # SGD default (PyTorch): decay everything; exclude_1d=True spares 1-D params only
    sgd, _ = _run(_config(weight_decay=0.5), params, grads)
    sgd_ex, _ = _run(_config(weight_decay=0.5, exclude_1d=True), params, grads)
    assert not np.allclose(sgd["bn"]["scale"], plain["bn"]["scale"])
    np.testing.assert_allclose(sgd_ex["bn"]["scale"], plain["bn"]["scale"], rtol=1e-5)
    np.testing.assert_allclose(sgd_ex["conv"]["kernel"], sgd["conv"]["kernel"], rtol=1e-6)


def test_sgd_matches_torch_optimizer():
    torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    params, grads = _problem(3)
    cfg = _config(nesterov=True, weight_decay=1e-3)
    ours, schedule = _run(cfg, params, grads)
    leaves, treedef = jax.tree.flatten(params)
    tparams = [torch.nn.Parameter(torch.from_numpy(np.array(a))) for a in leaves]
    opt = torch.optim.SGD(tparams, lr=0.0, momentum=0.9, weight_decay=1e-3, nesterov=True)
    for t, g in enumerate(grads):
        for group in opt.param_groups:
            group["lr"] = float(schedule(t))
        for tp, tg in zip(tparams, jax.tree.leaves(g)):
            tp.grad = torch.from_numpy(np.array(tg))
        opt.step()
    ref = jax.tree.unflatten(treedef, [tp.detach().numpy() for tp in tparams])
    _assert_tree_close(ours, ref)


def _schedule(total=120, spe=10, batch=512, **overrides):
    return optim.learning_rate_schedule(
        _config(**overrides), total_steps=total, steps_per_epoch=spe, global_batch_size=batch
    )


def test_cosine_schedule_with_warmup():
    s = _schedule(warmup_epochs=2.0)  # peak 0.2, 20 warm-up steps, cosine over 100
    for t, lr in [(0, 0.0), (10, 0.1), (19, 0.19), (20, 0.2), (70, 0.1), (120, 0.0), (500, 0.0)]:
        np.testing.assert_allclose(s(t), lr, atol=1e-7, err_msg=f"step {t}")
    np.testing.assert_allclose(s(45), 0.2 * 0.5 * (1 + math.cos(math.pi * 0.25)), rtol=1e-6)
    s = _schedule(warmup_epochs=0.0, final_lr=0.02, lr_scaling="none")  # peak 0.1
    for t, lr in [(0, 0.1), (60, 0.06), (120, 0.02)]:
        np.testing.assert_allclose(s(t), lr, rtol=1e-6, err_msg=f"step {t}")
    # a run shorter than its warm-up only warms up
    short = _schedule(total=5, warmup_epochs=1.0)
    np.testing.assert_allclose([short(t) for t in range(6)], [0.0, 0.02, 0.04, 0.06, 0.08, 0.1])
    # traceable: a jitted step gives the same value
    np.testing.assert_allclose(jax.jit(s)(jnp.int32(60)), 0.06, rtol=1e-6)


def test_step_and_constant_schedules():
    s = _schedule(schedule="step", warmup_epochs=0.0, decay_epochs=(6, 3), lr_scaling="none")
    for t, lr in [(0, 0.1), (29, 0.1), (30, 0.01), (59, 0.01), (60, 0.001), (119, 0.001)]:
        np.testing.assert_allclose(s(t), lr, rtol=1e-6, err_msg=f"step {t}")
    s = _schedule(schedule="step", warmup_epochs=0.5, decay_epochs=(2.5,), batch=256)
    for t, lr in [(0, 0.0), (1, 0.02), (5, 0.1), (24, 0.1), (25, 0.01)]:
        np.testing.assert_allclose(s(t), lr, rtol=1e-6, atol=1e-8, err_msg=f"step {t}")
    s = _schedule(schedule="constant", warmup_epochs=1.0, batch=1024)  # peak 0.4
    for t, lr in [(0, 0.0), (5, 0.2), (10, 0.4), (119, 0.4)]:
        np.testing.assert_allclose(s(t), lr, rtol=1e-6, err_msg=f"step {t}")
    assert optim.peak_learning_rate(_config(), 4096) == pytest.approx(1.6)


@pytest.mark.parametrize(
    "overrides, match",
    [
        ({"name": "adam"}, r"optim\.name must be one of \['sgd', 'lars'\]"),
        (
            {"schedule": "linear"},
            r"optim\.schedule must be one of \['cosine', 'step', 'constant'\]",
        ),
        ({"lr_scaling": "sqrt"}, r"optim\.lr_scaling must be one of \['linear', 'none'\]"),
        ({"exclude_1d": "yes"}, r"optim\.exclude_1d"),
        ({"warmup_epochs": -1.0}, r"optim\.warmup_epochs must be >= 0"),
        ({"lr": 0.1}, r"unknown key\(s\) \['lr'\] in optim"),
        ({"base_lr": None}, r"optim\.base_lr is required"),
    ],
)
def test_invalid_optim_config(overrides, match):
    with pytest.raises(ValueError, match=match):
        optim.make_optimizer(
            _config(**overrides), total_steps=10, steps_per_epoch=1, global_batch_size=256
        )


def test_ema_momentum_schedule():
    T = 101
    s = optim.ema_momentum_schedule({"base": 0.99, "schedule": "cosine"}, total_steps=T)
    np.testing.assert_allclose(s(0), 0.99, rtol=1e-7)
    np.testing.assert_allclose(s(T - 1), 1.0, rtol=1e-7)
    np.testing.assert_allclose(s(50), 0.995, rtol=1e-7)
    np.testing.assert_allclose(jax.jit(s)(jnp.int32(T - 1)), 1.0, rtol=1e-7)
    assert float(s(T + 10)) == pytest.approx(1.0)  # clipped past the end
    c = optim.ema_momentum_schedule(ml_collections.ConfigDict({"base": 0.999}), total_steps=T)
    np.testing.assert_allclose([c(0), c(T - 1)], [0.999, 0.999], rtol=1e-7)
    with pytest.raises(ValueError, match=r"ema\.schedule must be one of"):
        optim.ema_momentum_schedule({"base": 0.99, "schedule": "linear"}, total_steps=T)


def test_ema_update():
    target = {"a": np.ones(3, np.float32), "b": {"c": np.full((2, 2), 4.0, np.float32)}}
    online = {"a": np.zeros(3, np.float32), "b": {"c": np.zeros((2, 2), np.float32)}}
    out = optim.ema_update(target, online, 0.9)
    np.testing.assert_allclose(out["a"], 0.9)
    np.testing.assert_allclose(out["b"]["c"], 3.6)
    assert out["a"].dtype == np.float32
    out = jax.jit(optim.ema_update)(target, online, jnp.float32(0.5))
    np.testing.assert_allclose(out["b"]["c"], 2.0)
