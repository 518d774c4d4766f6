"""Optimisers (PyTorch-exact SGD and MoCo-v3/SCE LARS), learning-rate and EMA-momentum schedules.

`config.optim` schema (ml_collections.ConfigDict):
```
name               'sgd' | 'lars'
base_lr            float; peak lr = base_lr * global_batch_size / 256 ('linear') or base_lr ('none')
lr_scaling         'linear' | 'none'                               (default 'linear')
momentum           float                                           (default 0.9)
nesterov           bool                                            (default False)
weight_decay       float                                           (default 0)
schedule           'cosine' | 'step' | 'constant'                  (default 'cosine')
warmup_epochs      float; linear warm-up from 0 to the peak lr     (default 0)
decay_epochs       tuple of epochs, 'step' only                    (default ())
decay_factor       float, 'step' only                              (default 0.1)
final_lr           float, cosine end value                         (default 0)
trust_coefficient  float, LARS eta                                 (default 1e-3)
exclude_1d         bool | None; 1-D params (BN, biases) get no weight decay and no LARS adaptation.
                   None = the optimiser's reference default: True for LARS (SCE / MoCo v3),
                   False for SGD (PyTorch)                         (default None)
```
Both optimisers apply the learning rate AFTER the momentum trace, as torch does:
`buf <- mu * buf + g; p <- p - lr_t * buf` (so a changing lr does not rescale the history).
"""

import math
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax

OPTIMIZERS = ("sgd", "lars")
LR_SCALINGS = ("linear", "none")
SCHEDULES = ("cosine", "step", "constant")
EMA_SCHEDULES = ("constant", "cosine")

_OPTIM_DEFAULTS = {
    "name": None,
    "base_lr": None,
    "lr_scaling": "linear",
    "momentum": 0.9,
    "nesterov": False,
    "weight_decay": 0.0,
    "schedule": "cosine",
    "warmup_epochs": 0.0,
    "decay_epochs": (),
    "decay_factor": 0.1,
    "final_lr": 0.0,
    "trust_coefficient": 1e-3,
    "exclude_1d": None,
}
_EMA_DEFAULTS = {"base": None, "schedule": "constant"}


def _as_dict(cfg: Any, where: str, defaults: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(cfg, ml_collections.ConfigDict):
        cfg = cfg.to_dict()
    if not isinstance(cfg, Mapping):
        raise ValueError(f"{where} must be a ConfigDict or mapping, got {type(cfg).__name__}")
    unknown = sorted(set(cfg) - set(defaults))
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} in {where}; allowed keys: {list(defaults)}")
    out = dict(defaults)
    out.update(cfg)
    for key, value in out.items():
        if value is None and defaults[key] is None and key != "exclude_1d":
            raise ValueError(f"{where}.{key} is required")
    return out


def _choice(cfg: Mapping[str, Any], key: str, allowed: tuple[str, ...], where: str) -> str:
    if cfg[key] not in allowed:
        raise ValueError(f"{where}.{key} must be one of {list(allowed)}, got {cfg[key]!r}")
    return cfg[key]


def _validated(optim_config: Any) -> dict[str, Any]:
    cfg = _as_dict(optim_config, "optim", _OPTIM_DEFAULTS)
    _choice(cfg, "name", OPTIMIZERS, "optim")
    _choice(cfg, "lr_scaling", LR_SCALINGS, "optim")
    _choice(cfg, "schedule", SCHEDULES, "optim")
    if cfg["warmup_epochs"] < 0:
        raise ValueError(f"optim.warmup_epochs must be >= 0, got {cfg['warmup_epochs']!r}")
    if cfg["exclude_1d"] not in (None, True, False):
        raise ValueError(f"optim.exclude_1d must be True, False or None, got {cfg['exclude_1d']!r}")
    return cfg


def peak_learning_rate(optim_config: Any, global_batch_size: int) -> float:
    """base_lr scaled by the batch size: base_lr * B / 256 ('linear') or base_lr ('none')."""
    cfg = _validated(optim_config)
    scale = global_batch_size / 256.0 if cfg["lr_scaling"] == "linear" else 1.0
    return float(cfg["base_lr"]) * scale


def learning_rate_schedule(
    optim_config: Any, *, total_steps: int, steps_per_epoch: int, global_batch_size: int
) -> optax.Schedule:
    """Per-step learning rate (step = number of updates already applied, from 0).

    Warm-up: `lr_t = peak * t / W` for `t < W = round(warmup_epochs * steps_per_epoch)` (as MoCo
    v3 / SCE, which warm up per iteration from 0). After it:
    - cosine: `final + (peak - final) * (1 + cos(pi * (t - W) / (total_steps - W))) / 2`;
    - step: `peak * decay_factor ** #{e in decay_epochs : t >= round(e * steps_per_epoch)}`;
    - constant: `peak`.
    """
    cfg = _validated(optim_config)
    peak = peak_learning_rate(cfg, global_batch_size)
    warmup = int(round(cfg["warmup_epochs"] * steps_per_epoch))
    kind = cfg["schedule"]
    final = float(cfg["final_lr"])
    factor = float(cfg["decay_factor"])
    boundaries = np.asarray(
        sorted(int(round(e * steps_per_epoch)) for e in cfg["decay_epochs"]), np.int32
    )
    # a run shorter than its warm-up (e.g. a `runlocal` smoke run) only warms up, as in torch
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


def _ndim_gt1(params: Any) -> Any:
    return jax.tree.map(lambda p: p.ndim > 1, params)


def make_optimizer(
    optim_config: Any, *, total_steps: int, steps_per_epoch: int, global_batch_size: int
) -> tuple[optax.GradientTransformation, optax.Schedule]:
    """`(transformation, lr schedule)` for `config.optim`.

    SGD (torch.optim.SGD, coupled weight decay, dampening 0):
      `g <- g + wd * p; buf <- mu * buf + g; p <- p - lr * buf`
      (nesterov: `p <- p - lr * (g + mu * buf)`).
    LARS (MoCo v3 / SCE `LARS`): for params with ndim > 1 (all params if not exclude_1d)
      `g <- g + wd * p; g <- g * eta * ||p|| / ||g||` (ratio 1 where a norm is 0), then as SGD.
    With `exclude_1d`, 1-D params (BN, biases) get neither weight decay nor the trust ratio.
    """
    cfg = _validated(optim_config)
    schedule = learning_rate_schedule(
        cfg,
        total_steps=total_steps,
        steps_per_epoch=steps_per_epoch,
        global_batch_size=global_batch_size,
    )
    is_lars = cfg["name"] == "lars"
    exclude_1d = cfg["exclude_1d"] if cfg["exclude_1d"] is not None else is_lars
    mask = _ndim_gt1 if exclude_1d else None
    chain = []
    if cfg["weight_decay"]:
        chain.append(optax.add_decayed_weights(float(cfg["weight_decay"]), mask=mask))
    if is_lars:
        trust = optax.scale_by_trust_ratio(trust_coefficient=float(cfg["trust_coefficient"]))
        chain.append(optax.masked(trust, mask) if mask is not None else trust)
    if cfg["momentum"]:
        chain.append(optax.trace(decay=float(cfg["momentum"]), nesterov=bool(cfg["nesterov"])))
    chain.append(optax.scale_by_learning_rate(schedule))
    return optax.chain(*chain), schedule


def ema_momentum_schedule(ema_config: Any, *, total_steps: int) -> Callable[[Any], jnp.ndarray]:
    """Momentum of the target (EMA) network at global step t (jnp-traceable).

    constant: `m_t = m0`; cosine (BYOL): `m_t = 1 - (1 - m0) * (cos(pi * t / (T - 1)) + 1) / 2`,
    so `m_0 = m0` and `m_{T-1} = 1` (t clipped to [0, T - 1]).
    """
    cfg = _as_dict(ema_config, "ema", _EMA_DEFAULTS)
    _choice(cfg, "schedule", EMA_SCHEDULES, "ema")
    m0 = float(cfg["base"])
    if not 0.0 <= m0 <= 1.0:
        raise ValueError(f"ema.base must be in [0, 1], got {m0!r}")
    last = max(total_steps - 1, 1)

    if cfg["schedule"] == "constant":
        return lambda step: jnp.full((), m0, jnp.float32)

    def schedule(step):
        t = jnp.clip(jnp.asarray(step, jnp.float32), 0.0, last)
        return 1.0 - (1.0 - m0) * (jnp.cos(math.pi * t / last) + 1.0) / 2.0

    return schedule


def ema_update(target: Any, online: Any, momentum: Any) -> Any:
    """`target <- m * target + (1 - m) * online`, leaf by leaf (dtypes of `target` kept)."""
    return jax.tree.map(
        lambda t, o: (momentum * t + (1.0 - momentum) * o).astype(t.dtype), target, online
    )


# placeholder: replaced by the optim/models owner at merge
def _check_allowed(key: str, value: Any, allowed: tuple) -> None:
    from ssl_jax.configs import ConfigError

    if value not in allowed:
        raise ConfigError(f"config.{key}={value!r} is not allowed; allowed values: {list(allowed)}")


# placeholder: replaced by the optim/models owner at merge
def check_config(optim_config: Any) -> None:
    """The keys of `config.optim` whose allowed values this module owns; raises ConfigError."""
    from ssl_jax.configs import ConfigError

    _check_allowed("optim.name", optim_config.name, ("sgd", "lars"))
    _check_allowed("optim.schedule", optim_config.schedule, ("cosine", "step", "constant"))
    _check_allowed("optim.lr_scaling", optim_config.lr_scaling, ("linear", "none"))
    if not optim_config.base_lr > 0:
        raise ConfigError(f"config.optim.base_lr={optim_config.base_lr!r}: allowed (0, inf)")


# placeholder: replaced by the optim/models owner at merge
def check_ema_config(ema_config: Any) -> None:
    """`config.ema`: the schedule and the base momentum in [0, 1]; raises ConfigError."""
    from ssl_jax.configs import ConfigError

    _check_allowed("ema.schedule", ema_config.schedule, ("constant", "cosine"))
    if not 0.0 <= ema_config.base <= 1.0:
        raise ConfigError(f"config.ema.base={ema_config.base} must be in [0, 1]")
