"""Optimisers vs numpy re-implementations of the PyTorch updates; lr and EMA schedules (optax) vs
the hand-written formulas they replaced; parameter groups; config checks."""

import math

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import pytest

from ssl_jax import configs, optim
from ssl_jax.config_checks import ConfigError

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


def _lr_schedule(optim_config, *, total_steps, steps_per_epoch, global_batch_size):
    """The lr schedule `optim.make_optimizer` returns (the default group's, the logged lr)."""
    _, schedule = optim.make_optimizer(
        optim_config,
        total_steps=total_steps,
        steps_per_epoch=steps_per_epoch,
        global_batch_size=global_batch_size,
    )
    return schedule


def _param_labels(optim_config, params):
    """The group labels `optim.make_optimizer`'s multi_transform gives `params`' leaves."""
    groups = optim.check_config(optim_config)["param_groups"]
    return optim._labels(groups, params, "optim")


def _schedule(total=120, spe=10, batch=512, **overrides):
    return _lr_schedule(
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
    s = _schedule(schedule="step", warmup_epochs=0.0, decay_epochs=(3, 6), lr_scaling="none")
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
        (
            {"name": "adamw"},
            r"config\.optim\.name='adamw' is not allowed; allowed values: \['sgd', 'lars', 'adam'\]",
        ),
        (
            {"schedule": "linear"},
            r"config\.optim\.schedule='linear' .*\['cosine', 'step', 'constant'\]",
        ),
        ({"lr_scaling": "sqrt"}, r"config\.optim\.lr_scaling='sqrt' .*\['linear', 'none'\]"),
        ({"exclude_1d": "yes"}, r"config\.optim\.exclude_1d='yes' .*True, False or None"),
        ({"lr": 0.1}, r"config\.optim has unknown key\(s\) \['lr'\]; allowed keys"),
        ({"base_lr": None}, r"config\.optim\.base_lr is required"),
        # ranges, as a new user would get them wrong from the command line
        (
            {"base_lr": -1.0},
            r"config\.optim\.base_lr=-1\.0 is not allowed; it must be a number > 0",
        ),
        ({"base_lr": 0.0}, r"config\.optim\.base_lr=0\.0 .*> 0"),
        ({"base_lr": "0.1"}, r"config\.optim\.base_lr='0\.1' .*a number > 0"),
        ({"base_lr": float("nan")}, r"config\.optim\.base_lr=nan"),
        ({"momentum": 1.0}, r"config\.optim\.momentum=1\.0 .*in \[0, 1\)"),
        ({"momentum": -0.1}, r"config\.optim\.momentum=-0\.1 .*in \[0, 1\)"),
        ({"momentum": 0.0, "nesterov": True}, r"config\.optim\.nesterov=True needs .*momentum > 0"),
        ({"nesterov": 1}, r"config\.optim\.nesterov=1 .*True or False"),
        ({"weight_decay": -1e-4}, r"config\.optim\.weight_decay=-0\.0001 .*>= 0"),
        ({"warmup_epochs": -1.0}, r"config\.optim\.warmup_epochs=-1\.0 .*>= 0"),
        (
            {"decay_epochs": (160.0, 120.0)},
            r"config\.optim\.decay_epochs=\(160\.0, 120\.0\) .*ascending",
        ),
        ({"decay_epochs": (-1.0,)}, r"config\.optim\.decay_epochs=\(-1\.0,\) .*non-negative"),
        ({"decay_epochs": 30.0}, r"config\.optim\.decay_epochs=30\.0 .*tuple"),
        ({"decay_factor": 0.0}, r"config\.optim\.decay_factor=0\.0 .*in \(0, 1\]"),
        ({"decay_factor": 10.0}, r"config\.optim\.decay_factor=10\.0 .*in \(0, 1\]"),
        ({"final_lr": -0.1}, r"config\.optim\.final_lr=-0\.1 .*>= 0"),
        ({"final_lr": 0.5}, r"config\.optim\.final_lr=0\.5 .*<= the peak lr 0\.1"),
        ({"trust_coefficient": 0.0}, r"config\.optim\.trust_coefficient=0\.0 .*> 0"),
        ({"name": "adam", "b2": 1.0}, r"config\.optim\.b2=1\.0 .*in \[0, 1\)"),
        ({"name": "adam", "eps": 0.0}, r"config\.optim\.eps=0\.0 .*> 0"),
        ({"param_groups": ("head", "projector/.*")}, r"config\.optim\.param_groups must be"),
        ({"param_groups": {"head": {"base_lr": 1.0}}}, r"param_groups\.head\.regex is required"),
        (
            {"param_groups": {"head": {"regex": "(", "base_lr": 1.0}}},
            r"head\.regex='\(' is not a regex",
        ),
        (
            {"param_groups": {"head": {"regex": "p/.*", "lr": 1.0}}},
            r"head has unknown key\(s\) \['lr'\]",
        ),
        (
            {"param_groups": {"head": {"regex": "p/.*", "base_lr": -1.0}}},
            r"head\.base_lr=-1\.0 .*> 0",
        ),
        (
            {"param_groups": {"default": {"regex": "p/.*"}}},
            r"'default' is the name of the unmatched",
        ),
    ],
)
def test_invalid_optim_config(overrides, match):
    # ConfigError is a ValueError: callers that catch ValueError keep working
    for check in (
        lambda c: optim.make_optimizer(c, total_steps=10, steps_per_epoch=1, global_batch_size=256),
        lambda c: optim.check_config(c, global_batch_size=256),
    ):
        with pytest.raises(ConfigError, match=match):
            check(_config(**{"lr_scaling": "none", **overrides}))
    assert issubclass(ConfigError, ValueError)


def test_check_config_names_its_block_and_fills_defaults():
    with pytest.raises(ConfigError, match=r"config\.probe\.optim\.base_lr=-1\.0"):
        optim.check_config({"name": "sgd", "base_lr": -1.0}, "probe.optim")
    with pytest.raises(ConfigError, match=r"config\.probe\.optim\.momentum=1\.5"):
        optim.make_optimizer(
            {"name": "sgd", "base_lr": 0.1, "momentum": 1.5},
            total_steps=10,
            steps_per_epoch=1,
            global_batch_size=256,
            where="probe.optim",
        )
    cfg = optim.check_config({"name": "sgd", "base_lr": 0.1})
    assert cfg["momentum"] == 0.9 and cfg["schedule"] == "cosine" and cfg["param_groups"] == {}
    # final_lr against the peak needs the batch size when the lr is scaled by it
    linear = {"name": "sgd", "base_lr": 0.1, "final_lr": 0.15}
    optim.check_config(linear)
    optim.check_config(linear, global_batch_size=512)  # peak 0.2
    with pytest.raises(ConfigError, match=r"final_lr=0\.15 .*peak lr 0\.05"):
        optim.check_config(linear, global_batch_size=128)
    # the repository's own defaults pass
    optim.check_config(configs.base_config().optim, global_batch_size=256)
    optim.check_ema_config(configs.base_config().ema)


@pytest.mark.parametrize(
    "ema, match",
    [
        ({"base": 1.5}, r"config\.ema\.base=1\.5 is not allowed; it must be in \[0, 1\]"),
        ({"base": -0.1}, r"config\.ema\.base=-0\.1 .*in \[0, 1\]"),
        ({"base": None}, r"config\.ema\.base is required"),
        ({"base": "0.99"}, r"config\.ema\.base='0\.99'"),
        (
            {"base": 0.99, "schedule": "linear"},
            r"config\.ema\.schedule='linear' .*\['constant', 'cosine'\]",
        ),
        ({"base": 0.99, "momentum": 0.9}, r"config\.ema has unknown key\(s\) \['momentum'\]"),
    ],
)
def test_invalid_ema_config(ema, match):
    with pytest.raises(ConfigError, match=match):
        optim.check_ema_config(ema)
    with pytest.raises(ConfigError, match=match):
        optim.ema_momentum_schedule(ema, total_steps=10)


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


def test_ema_update():
    target = {"a": np.ones(3, np.float32), "b": {"c": np.full((2, 2), 4.0, np.float32)}}
    online = {"a": np.zeros(3, np.float32), "b": {"c": np.zeros((2, 2), np.float32)}}
    out = optim.ema_update(target, online, 0.9)
    np.testing.assert_allclose(out["a"], 0.9)
    np.testing.assert_allclose(out["b"]["c"], 3.6)
    assert out["a"].dtype == np.float32
    out = jax.jit(optim.ema_update)(target, online, jnp.float32(0.5))
    np.testing.assert_allclose(out["b"]["c"], 2.0)


# --- optax schedules vs the hand-written formulas they replaced (commit cf85586) -------------


def _old_lr_schedule(cfg, *, total_steps, steps_per_epoch, global_batch_size):
    """The hand-written schedule of `optim.make_optimizer` before it used optax."""
    scale = global_batch_size / 256.0 if cfg["lr_scaling"] == "linear" else 1.0
    peak = float(cfg["base_lr"]) * scale
    warmup = int(round(cfg["warmup_epochs"] * steps_per_epoch))
    kind, final, factor = cfg["schedule"], float(cfg["final_lr"]), float(cfg["decay_factor"])
    boundaries = np.asarray(
        sorted(int(round(e * steps_per_epoch)) for e in cfg["decay_epochs"]), np.int32
    )
    decay_len = max(total_steps - warmup, 1)

    def schedule(step):
        t = jnp.asarray(step, jnp.float32)
        if kind == "cosine":
            progress = jnp.clip((t - warmup) / decay_len, 0.0, 1.0)
            lr = final + (peak - final) * 0.5 * (1.0 + jnp.cos(jnp.pi * progress))
        elif kind == "step":
            passed = jnp.sum(jnp.asarray(step, jnp.int32) >= boundaries) if boundaries.size else 0
            lr = peak * jnp.power(factor, jnp.asarray(passed, jnp.float32))
        else:
            lr = jnp.full((), peak, jnp.float32)
        if warmup > 0:
            lr = jnp.where(t < warmup, peak * t / warmup, lr)
        return lr

    return schedule


# (overrides, total_steps, steps_per_epoch, global_batch_size)
_SCHEDULE_CASES = [
    ({}, 1000, 10, 512),  # cosine with 10 warm-up steps
    ({"warmup_epochs": 0.0}, 997, 7, 256),
    ({"warmup_epochs": 2.5, "final_lr": 1e-3, "base_lr": 0.05}, 1003, 13, 4096),
    ({"warmup_epochs": 0.25, "lr_scaling": "none", "base_lr": 30.0}, 6, 10, 32),  # runlocal-like
    ({"warmup_epochs": 2.0}, 15, 10, 512),  # shorter than its warm-up
    ({"warmup_epochs": 2.0, "schedule": "constant"}, 15, 10, 512),
    ({"warmup_epochs": 0.5, "schedule": "constant", "base_lr": 0.3}, 200, 10, 1024),
    ({"schedule": "step", "warmup_epochs": 0.0, "decay_epochs": (3.0, 6.0)}, 120, 10, 256),
    # a boundary inside the warm-up, two equal ones, one after the end
    (
        {"schedule": "step", "warmup_epochs": 5.0, "decay_epochs": (3.0, 10.0, 10.0, 99.0)},
        300,
        7,
        512,
    ),
    (
        {"schedule": "step", "base_lr": 30.0, "lr_scaling": "none", "decay_epochs": (60.0, 80.0)},
        1000,
        10,
        256,
    ),
    (
        {
            "schedule": "step",
            "decay_factor": 0.2,
            "base_lr": 0.075,
            "decay_epochs": (1.0, 2.0, 3.0),
        },
        50,
        10,
        4096,
    ),
    ({"schedule": "step", "warmup_epochs": 9.0, "decay_epochs": (1.0,)}, 40, 10, 256),  # short
]


@pytest.mark.parametrize("case", range(len(_SCHEDULE_CASES)))
def test_optax_schedules_equal_the_old_formulas(case):
    overrides, total, spe, batch = _SCHEDULE_CASES[case]
    cfg = _config(**overrides)
    kw = dict(total_steps=total, steps_per_epoch=spe, global_batch_size=batch)
    steps = jnp.arange(total + 5, dtype=jnp.int32)  # every step, and a few past the end
    old = np.asarray(jax.jit(jax.vmap(_old_lr_schedule(cfg.to_dict(), **kw)))(steps))
    new_schedule = _lr_schedule(cfg, **kw)
    new = np.asarray(jax.jit(jax.vmap(new_schedule))(steps))
    assert new.dtype == np.float32
    if cfg.schedule == "step":
        # peak * f * f (optax) against peak * f ** 2 (before): within one float32 ulp
        np.testing.assert_allclose(new, old, rtol=1e-7, atol=0)
    else:  # the same float32 operations: bitwise equal
        np.testing.assert_array_equal(new, old)
    # eager calls with python ints (as the tests above) too
    old_schedule = _old_lr_schedule(cfg.to_dict(), **kw)
    for t in (0, 1, total // 2, total - 1, total + 3):
        np.testing.assert_allclose(new_schedule(t), old_schedule(t), rtol=1e-7, atol=0)


def _old_ema_cosine(m0, total_steps):
    last = max(total_steps - 1, 1)
    return lambda step: (
        1.0
        - (1.0 - m0)
        * (jnp.cos(math.pi * jnp.clip(jnp.asarray(step, jnp.float32), 0.0, last) / last) + 1.0)
        / 2.0
    )


@pytest.mark.parametrize("m0, total", [(0.99, 101), (0.996, 12_513), (0.9, 2), (1.0, 50)])
def test_ema_cosine_equals_the_old_formula(m0, total):
    steps = jnp.arange(total + 3, dtype=jnp.int32)
    new = optim.ema_momentum_schedule({"base": m0, "schedule": "cosine"}, total_steps=total)
    old = _old_ema_cosine(m0, total)
    np.testing.assert_array_equal(jax.jit(jax.vmap(new))(steps), jax.jit(jax.vmap(old))(steps))


def test_ema_update_equals_the_formula():
    rng = np.random.default_rng(0)
    target = {"a": rng.normal(size=(5, 3)).astype(np.float32), "b": rng.normal(size=7)}
    target["b"] = target["b"].astype(jnp.bfloat16)
    online = jax.tree.map(lambda a: rng.normal(size=a.shape).astype(a.dtype), target)
    update = jax.jit(optim.ema_update)
    formula = jax.jit(
        lambda t, o, m: jax.tree.map(lambda t, o: (m * t + (1.0 - m) * o).astype(t.dtype), t, o)
    )
    for m in (0.0, 0.5, 0.9, 0.99, 0.996, 0.999, 1.0):
        m = jnp.float32(m)
        out, ref = update(target, online, m), formula(target, online, m)
        # `(1 - m) * o + m * t` against `m * t + (1 - m) * o`: XLA:CPU contracts one product and
        # the sum into an FMA, so the two orders may differ in the last bit
        np.testing.assert_allclose(out["a"], ref["a"], rtol=2.5e-7, atol=1e-7)
        np.testing.assert_allclose(
            out["b"].astype(np.float32), ref["b"].astype(np.float32), rtol=8e-3, atol=8e-3
        )
        assert out["b"].dtype == jnp.bfloat16 and out["a"].dtype == np.float32
    # m = 1 keeps the target, m = 0 copies the online network, exactly
    jax.tree.map(np.testing.assert_array_equal, update(target, online, jnp.float32(1.0)), target)
    jax.tree.map(np.testing.assert_array_equal, update(target, online, jnp.float32(0.0)), online)


# --- parameter groups (optax.multi_transform) -------------------------------------------------


def _model_params(seed=0):
    rng = np.random.default_rng(seed)
    shapes = {
        "backbone": {"conv1": {"kernel": (3, 3, 2, 4)}, "bn1": {"scale": (4,), "bias": (4,)}},
        "projector": {"dense_0": {"kernel": (4, 6), "bias": (6,)}, "bn_0": {"scale": (6,)}},
        "flow": {"dense": {"kernel": (6, 6)}},
    }
    params = jax.tree.map(
        lambda s: rng.normal(size=s).astype(np.float32),
        shapes,
        is_leaf=lambda x: isinstance(x, tuple),
    )
    grads = [
        jax.tree.map(lambda a: rng.normal(size=a.shape).astype(np.float32), params)
        for _ in range(4)
    ]
    return params, grads


def _run_tree(cfg, params, grads):
    tx, schedule = optim.make_optimizer(
        cfg, total_steps=TOTAL_STEPS, steps_per_epoch=STEPS_PER_EPOCH, global_batch_size=BATCH
    )
    state = tx.init(params)
    update = jax.jit(tx.update)
    for g in grads:
        updates, state = update(g, state, params)
        params = optax.apply_updates(params, updates)
    return params, state, schedule


def _sub(tree, keys):
    return {k: tree[k] for k in keys}


def test_param_groups_match_separate_optimizers():
    params, grads = _model_params()
    groups = ml_collections.ConfigDict(
        {
            "head": {"regex": "projector/.*", "base_lr": 1.0, "weight_decay": 0.0},
            "flow": {
                "regex": "flow/.*",
                "name": "adam",
                "schedule": "constant",
                "warmup_epochs": 0.0,
            },
        }
    )
    cfg = _config(name="lars", weight_decay=1e-3, param_groups=groups)
    out, _, schedule = _run_tree(cfg, params, grads)
    # each group = its own optimiser, built from the top-level keys plus its overrides, on its part
    # of the tree
    parts = {
        "default": (_config(name="lars", weight_decay=1e-3), ["backbone"]),
        "head": (_config(name="lars", base_lr=1.0, weight_decay=0.0), ["projector"]),
        "flow": (
            _config(name="adam", weight_decay=1e-3, schedule="constant", warmup_epochs=0.0),
            ["flow"],
        ),
    }
    for part_cfg, keys in parts.values():
        ref, _, _ = _run_tree(part_cfg, _sub(params, keys), [_sub(g, keys) for g in grads])
        jax.tree.map(np.testing.assert_array_equal, _sub(out, keys), ref)
    # the returned (logged) lr is the default group's
    default_lrs = _lr_schedule(
        parts["default"][0],
        total_steps=TOTAL_STEPS,
        steps_per_epoch=STEPS_PER_EPOCH,
        global_batch_size=BATCH,
    )
    for t in range(TOTAL_STEPS):
        assert float(schedule(t)) == float(default_lrs(t))
    labels = _param_labels(cfg, params)
    assert (
        labels["projector"]["bn_0"]["scale"] == "head"
        and labels["flow"]["dense"]["kernel"] == "flow"
    )
    assert labels["backbone"]["bn1"]["bias"] == "default"


def test_no_param_groups_is_todays_single_optimizer():
    params, grads = _model_params(1)
    cfg = _config(weight_decay=1e-3)
    out, state, _ = _run_tree(cfg, params, grads)
    for empty in ({}, ml_collections.ConfigDict()):
        out2, state2, _ = _run_tree(_config(weight_decay=1e-3, param_groups=empty), params, grads)
        jax.tree.map(np.testing.assert_array_equal, out, out2)
    # today's chain, written out: same state structure (checkpoints) and bitwise the same params
    schedule = _old_lr_schedule(
        cfg.to_dict(),
        total_steps=TOTAL_STEPS,
        steps_per_epoch=STEPS_PER_EPOCH,
        global_batch_size=BATCH,
    )
    tx = optax.chain(
        optax.add_decayed_weights(1e-3), optax.trace(0.9), optax.scale_by_learning_rate(schedule)
    )
    ref_state = tx.init(params)
    assert jax.tree.structure(ref_state) == jax.tree.structure(tx.init(params))
    p = params
    for g in grads:
        u, ref_state = jax.jit(tx.update)(g, ref_state, p)
        p = optax.apply_updates(p, u)
    jax.tree.map(np.testing.assert_array_equal, out, p)
    assert jax.tree.structure(state) == jax.tree.structure(ref_state)


def test_param_group_errors_list_the_paths():
    params, _ = _model_params()
    bad = _config(param_groups={"head": {"regex": "head/.*", "base_lr": 1.0}})
    tx, _ = optim.make_optimizer(bad, total_steps=10, steps_per_epoch=1, global_batch_size=256)
    with pytest.raises(
        ConfigError,
        match=r"param_groups\.head\.regex='head/\.\*' matches no parameter.*backbone/bn1/bias",
    ):
        tx.init(params)
    with pytest.raises(ConfigError, match="matches no parameter"):  # under jit / eval_shape too
        jax.eval_shape(tx.init, params)
    many = {f"p{i}": np.zeros(2, np.float32) for i in range(40)}
    with pytest.raises(ConfigError, match=r"p0, .*\.\.\. \(28 more\)"):
        _param_labels(bad, many)
    overlap = _config(param_groups={"a": {"regex": "projector/.*"}, "b": {"regex": ".*/bias"}})
    with pytest.raises(
        ConfigError, match=r"'projector/dense_0/bias' matches the regexes .*disjoint"
    ):
        _param_labels(overlap, params)


def test_param_groups_override_from_the_command_line():
    c = configs.base_config()
    c.optim.param_groups = ml_collections.ConfigDict(
        {"head": {"regex": "projector/.*", "base_lr": 0.3}}
    )
    configs.apply_override(c, "optim.param_groups.head.base_lr=0.5")
    configs.apply_override(c, "optim.param_groups.head.regex=projector/dense_.*")
    cfg = optim.check_config(c.optim)
    assert cfg["param_groups"]["head"]["base_lr"] == 0.5
    assert cfg["param_groups"]["head"]["regex"] == "projector/dense_.*"
    assert cfg["param_groups"]["head"]["weight_decay"] == c.optim.weight_decay  # inherited


def test_adam_is_optax_adam():
    params, grads = _model_params(2)
    cfg = _config(name="adam", weight_decay=0.0, b1=0.8, b2=0.99, eps=1e-6)
    out, _, schedule = _run_tree(cfg, params, grads)
    tx = optax.adam(schedule, b1=0.8, b2=0.99, eps=1e-6)
    state, p = tx.init(params), params
    for g in grads:
        u, state = jax.jit(tx.update)(g, state, p)
        p = optax.apply_updates(p, u)
    jax.tree.map(np.testing.assert_array_equal, out, p)


def test_per_epoch_cosine_is_the_official_moco_formula():
    """schedule_unit='epoch': `lr·0.5(1 + cos(π e/E))` at every step of epoch e (MoCo v2 / JCL
    `adjust_learning_rate`), E = ceil(total / steps_per_epoch), the last epoch partial."""
    spe, total = 7, 7 * 5 - 3  # 5 epochs, the last one 4 steps long
    lr = _lr_schedule(
        dict(name="sgd", base_lr=0.03, lr_scaling="none", schedule_unit="epoch"),
        total_steps=total,
        steps_per_epoch=spe,
        global_batch_size=256,
    )
    expected = [0.03 * 0.5 * (1 + math.cos(math.pi * (t // spe) / 5)) for t in range(total)]
    np.testing.assert_allclose([float(lr(t)) for t in range(total)], expected, rtol=1e-6)
    per_step = _lr_schedule(
        dict(name="sgd", base_lr=0.03, lr_scaling="none"),
        total_steps=total,
        steps_per_epoch=spe,
        global_batch_size=256,
    )
    assert float(per_step(3)) != float(lr(3))  # the default still moves every step


def test_sce_warmup_reaches_the_peak_one_step_earlier():
    cfg = dict(name="sgd", base_lr=0.6, lr_scaling="none", warmup_epochs=1.0, schedule="constant")
    sce = _lr_schedule(
        {**cfg, "warmup_form": "sce"}, total_steps=20, steps_per_epoch=5, global_batch_size=256
    )
    linear = _lr_schedule(cfg, total_steps=20, steps_per_epoch=5, global_batch_size=256)
    np.testing.assert_allclose(
        [float(sce(t)) for t in range(6)], [0, 0.15, 0.3, 0.45, 0.6, 0.6], rtol=1e-6
    )
    np.testing.assert_allclose(
        [float(linear(t)) for t in range(6)], [0, 0.12, 0.24, 0.36, 0.48, 0.6], rtol=1e-6
    )
    with pytest.raises(ConfigError, match="config.optim.warmup_form='cosine'"):
        optim.check_config({**cfg, "warmup_form": "cosine"})
    with pytest.raises(ConfigError, match="config.optim.schedule_unit='iter'"):
        optim.check_config({**cfg, "schedule_unit": "iter"})


def _pycontrast_lrs(lr, epochs, spe, warm_epochs=0, warmup_from=0.01, decay_rate=0.1):
    """PyContrast's lr of every iteration: `adjust_learning_rate` (cosine over epochs 1..E, per
    epoch, `main_contrast.py` L67–69) overridden by `warmup_learning_rate` (per iteration for
    epochs <= warm_epochs, from 0.01 to the cosine's value at epoch warm_epochs: `base_trainer.py`
    L66–89, `train_options.py` L43–57)."""
    eta_min = lr * decay_rate**3
    cosine = lambda e: eta_min + (lr - eta_min) * (1 + math.cos(math.pi * e / epochs)) / 2
    warmup_to = cosine(warm_epochs)
    out = []
    for epoch in range(1, epochs + 1):
        for idx in range(spe):
            value = cosine(epoch)
            if warm_epochs and epoch <= warm_epochs:
                p = (idx + (epoch - 1) * spe) / (warm_epochs * spe)
                value = warmup_from + p * (warmup_to - warmup_from)
            out.append(value)
    return np.asarray(out)


def _pycontrast_cfg(lr, **overrides):
    cfg = dict(name="sgd", base_lr=lr, lr_scaling="none", schedule_unit="epoch")
    return {**cfg, "final_lr": lr * 0.1**3, "epoch_offset": 1.0, **overrides}


def test_epoch_offset_counts_epochs_from_one_as_pycontrast():
    """CMCv2 / InfoMin at batch 256: the cosine of epochs 1..E (the last epoch at final_lr); the
    default offset 0 runs one epoch behind (epochs 0..E−1)."""
    spe, epochs = 3, 6
    kw = dict(total_steps=spe * epochs, steps_per_epoch=spe, global_batch_size=256)
    lr = _lr_schedule(_pycontrast_cfg(0.03), **kw)
    got = np.asarray([float(lr(t)) for t in range(spe * epochs)])
    expected = _pycontrast_lrs(0.03, epochs, spe)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)  # float32 near final_lr
    lagged = _lr_schedule(_pycontrast_cfg(0.03, epoch_offset=0.0), **kw)
    assert not np.allclose([float(lagged(t)) for t in range(spe * epochs)], expected, rtol=1e-3)
    with pytest.raises(ConfigError, match="config.optim.epoch_offset=1.0 is only allowed"):
        optim.check_config(_pycontrast_cfg(0.03, schedule="step"))


def test_pycontrast_warmup_starts_at_warmup_from_and_keeps_the_whole_cosine():
    """InfoMin above batch 256: per-iteration warm-up from 0.01 to the cosine's value at epoch 5,
    then the per-epoch cosine over all E epochs (not E − 5)."""
    spe, epochs = 4, 12
    kw = dict(total_steps=spe * epochs, steps_per_epoch=spe, global_batch_size=512)
    cfg = _pycontrast_cfg(0.06, warmup_epochs=5.0, warmup_from=0.01, warmup_form="pycontrast")
    lr = _lr_schedule(cfg, **kw)
    got = np.asarray([float(lr(t)) for t in range(spe * epochs)])
    np.testing.assert_allclose(
        got, _pycontrast_lrs(0.06, epochs, spe, warm_epochs=5), rtol=1e-6, atol=1e-8
    )
    linear = _lr_schedule({**cfg, "warmup_form": "linear"}, **kw)
    assert float(linear(5 * spe)) != pytest.approx(got[5 * spe], rel=1e-3)
