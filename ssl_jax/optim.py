"""Optimisers (PyTorch-exact SGD, MoCo-v3/SCE LARS, Adam), lr and EMA-momentum schedules, parameter
groups, and the checks of `config.optim` / `config.ema` (this module owns their allowed values).

`config.optim` schema (ml_collections.ConfigDict):
```
name               'sgd' | 'lars' | 'adam'
base_lr            float > 0; peak lr = base_lr * global_batch_size / 256 ('linear') or base_lr ('none')
lr_scaling         'linear' | 'none'                               (default 'linear')
momentum           float in [0, 1); SGD / LARS                     (default 0.9)
nesterov           bool; SGD / LARS, needs momentum > 0            (default False)
b1, b2, eps        Adam's moment decays in [0, 1) and eps > 0      (default 0.9, 0.999, 1e-8)
weight_decay       float >= 0, coupled (added to the gradient)     (default 0)
schedule           'cosine' | 'step' | 'constant'                  (default 'cosine')
warmup_epochs      float >= 0; linear warm-up from warmup_from to the peak lr (default 0)
warmup_from        float >= 0, the warm-up's first lr                (default 0)
warmup_form        'linear': `from + (peak−from)·t/W` (MoCo v3) | 'sce': `… t/(W−1)`, the peak at
                   t = W−1 (SCE's official `LinearWarmupCosineAnnealingLR`, stepped per iteration) |
                   'pycontrast': per iteration (also with schedule_unit 'epoch') from `from` to the
                   cosine's value on the warm-up's last step, the cosine spanning the whole run, not
                   the steps after the warm-up (PyContrast `base_trainer.py` `warmup_learning_rate`,
                   `train_options.py` L43–57)                    (default 'linear')
schedule_unit      'step': the schedule moves every step | 'epoch': it moves once per epoch, at
                   the epoch's start (official MoCo v2 / JCL `adjust_learning_rate`: cosine
                   `lr·0.5(1 + cos(π e/E))` with the 0-based epoch e of E)  (default 'step')
epoch_offset       float >= 0, cosine only: the cosine's progress is `(t + offset·steps_per_epoch)/T`,
                   i.e. epochs counted from 1 with offset 1 (PyContrast `main_contrast.py` L67–69:
                   `cos(π e/E)` for e = 1..E, so the last epoch runs at final_lr)   (default 0)
decay_epochs       epochs >= 0 in ascending order, 'step' only    (default ())
decay_factor       float in (0, 1], 'step' only                    (default 0.1)
final_lr           float in [0, peak lr], cosine end value         (default 0)
trust_coefficient  float > 0, LARS eta                             (default 1e-3)
exclude_1d         bool | None; 1-D params (BN, biases) get no weight decay and no LARS adaptation.
                   None = the optimiser's reference default: True for LARS (SCE / MoCo v3),
                   False for SGD (PyTorch) and Adam                (default None)
param_groups       ConfigDict {group name: ConfigDict(regex=..., <any keys above>)} (default empty)
```
SGD and LARS apply the learning rate AFTER the momentum trace, as torch does:
`buf <- mu * buf + g; p <- p - lr_t * buf` (so a changing lr does not rescale the history).

Parameter groups (`optax.multi_transform`): each group's `regex` is matched (`re.fullmatch`) against
the '/'-joined path of every parameter, e.g. `'projector/.*'` or `'backbone/layer4_.*/bn.*'`; the
group's other keys override the top-level ones for its parameters (its own optimiser, lr schedule,
weight decay, ...). Parameters no regex matches form the 'default' group: the top-level settings.
A ConfigDict sorts its keys, so groups have no order: a parameter that two regexes match is an
error, as is a regex that matches no parameter (both raise `ConfigError` when the optimiser is
initialised on the parameters, listing them). The lr that `make_optimizer` returns (the logged
one) is the default group's. Example, a projector at 10x the lr without weight decay:
```
c.optim.param_groups = ml_collections.ConfigDict()
c.optim.param_groups.head = ml_collections.ConfigDict(
    dict(regex="projector/.*", base_lr=10 * c.optim.base_lr, weight_decay=0.0))
```
then `--config.optim.param_groups.head.base_lr=0.5` overrides it from the command line. Empty
(the default) builds exactly the single optimiser of before (same transformation and state).

`check_config(optim_config)` / `check_ema_config(ema_config)` raise `ssl_jax.configs.ConfigError`
naming `config.optim.<key>=<value>` and what is allowed; `make_optimizer` / `ema_momentum_schedule`
call them, and `validation.validate` should call them rather than copy their rules.
"""

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import optax

from ssl_jax.config_checks import ConfigError

OPTIMIZERS = ("sgd", "lars", "adam")
LR_SCALINGS = ("linear", "none")
WARMUP_FORMS = ("linear", "sce", "pycontrast")
SCHEDULE_UNITS = ("step", "epoch")
SCHEDULES = ("cosine", "step", "constant")
EMA_SCHEDULES = ("constant", "cosine")
# The target network's start: a copy of the online one (MoCo's `param_k.data.copy_`, eztorch's SCE)
# or its own random init (CEA-LIST/SCE, sce/models/siamese/momentum_base.py:53-54).
EMA_TARGET_INITS = ("copy", "independent")
DEFAULT_GROUP = "default"

_OPTIM_DEFAULTS = {
    "name": None,
    "base_lr": None,
    "lr_scaling": "linear",
    "momentum": 0.9,
    "nesterov": False,
    "b1": 0.9,
    "b2": 0.999,
    "eps": 1e-8,
    "weight_decay": 0.0,
    "schedule": "cosine",
    "warmup_epochs": 0.0,
    "warmup_from": 0.0,
    "warmup_form": "linear",
    "schedule_unit": "step",
    "epoch_offset": 0.0,
    "decay_epochs": (),
    "decay_factor": 0.1,
    "final_lr": 0.0,
    "trust_coefficient": 1e-3,
    "exclude_1d": None,
    "param_groups": {},
}
_GROUP_KEYS = ("regex", *(k for k in _OPTIM_DEFAULTS if k != "param_groups"))
_EMA_DEFAULTS = {"base": None, "schedule": "constant", "target_init": "copy"}
_MAX_LISTED_PATHS = 12


def _as_dict(cfg: Any, where: str) -> dict[str, Any]:
    if isinstance(cfg, ml_collections.ConfigDict):
        cfg = cfg.to_dict()
    if not isinstance(cfg, Mapping):
        raise ConfigError(
            f"config.{where} must be a ConfigDict or mapping, got {type(cfg).__name__}"
        )
    return dict(cfg)


def _with_defaults(
    cfg: Mapping[str, Any], where: str, defaults: Mapping[str, Any], allowed=None
) -> dict[str, Any]:
    allowed = list(defaults) if allowed is None else list(allowed)
    unknown = sorted(set(cfg) - set(allowed))
    if unknown:
        raise ConfigError(f"config.{where} has unknown key(s) {unknown}; allowed keys: {allowed}")
    out = dict(defaults)
    out.update(cfg)
    for key, value in out.items():
        if value is None and defaults.get(key, 0) is None and key != "exclude_1d":
            raise ConfigError(f"config.{where}.{key} is required")
    return out


def _choice(cfg: Mapping[str, Any], key: str, allowed: tuple[str, ...], where: str) -> None:
    if cfg[key] not in allowed:
        raise ConfigError(
            f"config.{where}.{key}={cfg[key]!r} is not allowed; allowed values: {list(allowed)}"
        )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _number(cfg: Mapping[str, Any], key: str, where: str, ok: Callable[[float], bool], rule: str):
    value = cfg[key]
    if not _is_number(value) or not ok(value):
        raise ConfigError(f"config.{where}.{key}={value!r} is not allowed; it must be {rule}")
    return value


def _bool(cfg: Mapping[str, Any], key: str, where: str, allow_none: bool = False) -> None:
    value = cfg[key]
    if not (isinstance(value, bool) or (allow_none and value is None)):
        allowed = "True, False or None" if allow_none else "True or False"
        raise ConfigError(f"config.{where}.{key}={value!r} is not allowed; allowed: {allowed}")


def _peak_lr(cfg: Mapping[str, Any], global_batch_size: int) -> float:
    scale = global_batch_size / 256.0 if cfg["lr_scaling"] == "linear" else 1.0
    return float(cfg["base_lr"]) * scale


def _check_settings(cfg: dict[str, Any], where: str, global_batch_size: int | None) -> None:
    """Range and choice checks of one group's complete settings (defaults filled in)."""
    _choice(cfg, "name", OPTIMIZERS, where)
    _choice(cfg, "lr_scaling", LR_SCALINGS, where)
    _choice(cfg, "schedule", SCHEDULES, where)
    _choice(cfg, "warmup_form", WARMUP_FORMS, where)
    _choice(cfg, "schedule_unit", SCHEDULE_UNITS, where)
    _number(cfg, "base_lr", where, lambda v: v > 0, "a number > 0")
    _number(cfg, "momentum", where, lambda v: 0 <= v < 1, "in [0, 1)")
    _bool(cfg, "nesterov", where)
    if cfg["nesterov"] and not cfg["momentum"] and cfg["name"] != "adam":
        raise ConfigError(
            f"config.{where}.nesterov=True needs config.{where}.momentum > 0 (as torch.optim.SGD)"
        )
    for key in ("b1", "b2"):
        _number(cfg, key, where, lambda v: 0 <= v < 1, "in [0, 1)")
    _number(cfg, "eps", where, lambda v: v > 0, "a number > 0")
    _number(cfg, "weight_decay", where, lambda v: v >= 0, "a number >= 0")
    _number(cfg, "warmup_epochs", where, lambda v: v >= 0, "a number >= 0")
    _number(cfg, "warmup_from", where, lambda v: v >= 0, "a number >= 0")
    _number(cfg, "epoch_offset", where, lambda v: v >= 0, "a number >= 0")
    if cfg["epoch_offset"] and cfg["schedule"] != "cosine":
        raise ConfigError(
            f"config.{where}.epoch_offset={cfg['epoch_offset']!r} is only allowed with "
            f"config.{where}.schedule='cosine' (got {cfg['schedule']!r}); set it to 0"
        )
    epochs = cfg["decay_epochs"]
    if (
        not isinstance(epochs, tuple | list)
        or not all(_is_number(e) and e >= 0 for e in epochs)
        or list(epochs) != sorted(epochs)
    ):
        raise ConfigError(
            f"config.{where}.decay_epochs={epochs!r} is not allowed; it must be a tuple of "
            "non-negative epochs in ascending order, e.g. (120.0, 160.0)"
        )
    _number(cfg, "decay_factor", where, lambda v: 0 < v <= 1, "in (0, 1]")
    _number(cfg, "final_lr", where, lambda v: v >= 0, "a number >= 0")
    if global_batch_size is not None or cfg["lr_scaling"] == "none":
        peak = _peak_lr(cfg, global_batch_size or 256)
        if cfg["final_lr"] > peak:
            raise ConfigError(
                f"config.{where}.final_lr={cfg['final_lr']!r} is not allowed; it must be <= the "
                f"peak lr {peak!r} (config.{where}.base_lr={cfg['base_lr']!r}, "
                f"lr_scaling={cfg['lr_scaling']!r})"
            )
    _number(cfg, "trust_coefficient", where, lambda v: v > 0, "a number > 0")
    _bool(cfg, "exclude_1d", where, allow_none=True)


def check_config(
    optim_config: Any, where: str = "optim", *, global_batch_size: int | None = None
) -> dict[str, Any]:
    """Check `config.optim` (schema in the module docstring) and return it as a dict with the
    defaults filled in (`param_groups` as `{name: complete settings + 'regex'}`).

    Raises `ConfigError` naming `config.<where>.<key>=<value>` and what is allowed. `where` names
    the block in messages (e.g. 'probe.optim'). With `global_batch_size`, final_lr is also
    checked against the peak lr (without it, only when lr_scaling is 'none').
    """
    cfg = _with_defaults(_as_dict(optim_config, where), where, _OPTIM_DEFAULTS)
    _check_settings(cfg, where, global_batch_size)
    groups_cfg = _as_dict(cfg["param_groups"] or {}, f"{where}.param_groups")
    groups = {}
    for name, group in groups_cfg.items():
        gwhere = f"{where}.param_groups.{name}"
        if name == DEFAULT_GROUP:
            raise ConfigError(
                f"config.{gwhere}: {DEFAULT_GROUP!r} is the name of the unmatched parameters' "
                f"group (the top-level config.{where} settings); name the group otherwise"
            )
        group = _as_dict(group, gwhere)
        base = {k: v for k, v in cfg.items() if k != "param_groups"}
        full = _with_defaults(group, gwhere, {**base, "regex": None}, allowed=_GROUP_KEYS)
        regex = full["regex"]
        try:
            re.compile(regex) if isinstance(regex, str) else None
        except re.error as e:
            raise ConfigError(f"config.{gwhere}.regex={regex!r} is not a regex: {e}") from None
        if not isinstance(regex, str) or not regex:
            raise ConfigError(
                f"config.{gwhere}.regex={regex!r} is not allowed; it must be a non-empty regex "
                "matched against '/'-joined parameter paths, e.g. 'projector/.*'"
            )
        _check_settings(full, gwhere, global_batch_size)
        groups[name] = full
    cfg["param_groups"] = groups
    return cfg


def check_ema_config(ema_config: Any, where: str = "ema") -> dict[str, Any]:
    """Check `config.ema` (`base` in [0, 1], `schedule` in EMA_SCHEDULES, `target_init` in
    EMA_TARGET_INITS); return it as a dict with the defaults filled in. Raises `ConfigError`."""
    cfg = _with_defaults(_as_dict(ema_config, where), where, _EMA_DEFAULTS)
    _number(cfg, "base", where, lambda v: 0 <= v <= 1, "in [0, 1]")
    _choice(cfg, "schedule", EMA_SCHEDULES, where)
    _choice(cfg, "target_init", EMA_TARGET_INITS, where)
    return cfg


def peak_learning_rate(optim_config: Any, global_batch_size: int) -> float:
    """base_lr scaled by the batch size: base_lr * B / 256 ('linear') or base_lr ('none')."""
    return _peak_lr(check_config(optim_config), global_batch_size)


def _linear_warmup(start: float, end: float, warmup: int, form: str = "linear") -> optax.Schedule:
    # `start + (end - start) * t / W` (MoCo v3, PyContrast), or `… t / (W - 1)` (SCE's scheduler:
    # the peak at t = W - 1). Not `optax.linear_schedule`: that computes `-peak * (1 - t / W) +
    # peak`, whose cancellation moves the first steps' lr by up to ~1e-5 relative in float32 (t = 1
    # of W = 1000); with start 0 this is bitwise `peak * t / W`.
    span = max(warmup - 1, 1) if form == "sce" else warmup
    return lambda t: start + (end - start) * t / span


def _schedule(
    cfg: Mapping[str, Any], total_steps: int, steps_per_epoch: int, global_batch_size: int
) -> optax.Schedule:
    """Per-step learning rate (step = number of updates already applied, from 0), float32.

    Warm-up: `lr_t = from + (peak - from) * t / W` for `t < W = round(warmup_epochs *
    steps_per_epoch)` (as MoCo v3 / SCE, which warm up per iteration; `from` = warmup_from),
    joined (`optax.join_schedules`) to:
    - cosine: `final + (peak - final) * (1 + cos(pi * (t + o - W) / (total_steps - W))) / 2`
      (`optax.cosine_decay_schedule` of the decay's progress, clipped to [0, 1]; o = epoch_offset
      epochs in steps);
    - step: `peak * decay_factor ** #{e in decay_epochs : t >= round(e * steps_per_epoch)}`
      (`optax.piecewise_constant_schedule`);
    - constant: `peak` (`optax.constant_schedule`).
    warmup_form 'pycontrast' keeps the cosine over the whole run (W = 0 in its formula) and ramps
    from `from` to the cosine's value on step W - 1, per step even with schedule_unit 'epoch'.
    A run shorter than its warm-up (e.g. a `runlocal` smoke run) only warms up, as in torch.
    """
    peak = _peak_lr(cfg, global_batch_size)
    warmup = int(round(cfg["warmup_epochs"] * steps_per_epoch))
    kind = cfg["schedule"]
    form = cfg["warmup_form"]
    per_epoch = cfg["schedule_unit"] == "epoch"
    if per_epoch:  # the cosine spans whole epochs: progress e/E at epoch e's first step
        total_steps = math.ceil(total_steps / steps_per_epoch) * steps_per_epoch
    quantise = lambda t: (t // steps_per_epoch) * steps_per_epoch if per_epoch else t
    # 'pycontrast': the cosine over the whole run, so the decay after the warm-up starts at step W
    cosine_start = 0 if form == "pycontrast" else warmup
    warm_end = peak
    if kind == "cosine":
        final = float(cfg["final_lr"])
        decay_len = max(total_steps - cosine_start, 1)
        shift = cfg["epoch_offset"] * steps_per_epoch + warmup - cosine_start
        # decay_steps=1 on the progress t / decay_len: the cos argument is rounded as before
        # (`pi * progress`), so the values are bitwise those of the hand-written formula.
        cosine = optax.cosine_decay_schedule(init_value=peak - final, decay_steps=1, exponent=1)
        after = lambda t: final + cosine((jnp.asarray(t, jnp.float32) + shift) / decay_len)
        if form == "pycontrast" and warmup > 0:  # PyContrast's `warmup_to`
            warm_end = after(quantise(warmup - 1) - warmup)
    elif kind == "step":
        # join_schedules counts from the warm-up's end: boundaries relative to it (a negative one
        # has passed); equal boundaries decay twice, as before
        scales: dict[int, float] = {}
        for e in cfg["decay_epochs"]:
            b = int(round(e * steps_per_epoch)) - warmup
            scales[b] = scales.get(b, 1.0) * float(cfg["decay_factor"])
        after = optax.piecewise_constant_schedule(init_value=peak, boundaries_and_scales=scales)
    else:
        after = optax.constant_schedule(peak)
    joined = after
    if warmup > 0:
        warm = _linear_warmup(float(cfg["warmup_from"]), warm_end, warmup, form)
        joined = optax.join_schedules([warm, after], [warmup])

    def schedule(step):
        step = jnp.asarray(step)
        if per_epoch and form == "pycontrast":  # warm-up per step, then once per epoch
            step = jnp.where(step < warmup, step, quantise(step))
        elif per_epoch:  # the value at the start of the step's epoch
            step = quantise(step)
        t = step.astype(jnp.float32) if kind != "step" else step
        return jnp.asarray(joined(t), jnp.float32)

    return schedule


def _ndim_gt1(params: Any) -> Any:
    return jax.tree.map(lambda p: p.ndim > 1, params)


def _transformation(
    cfg: Mapping[str, Any], schedule: optax.Schedule
) -> optax.GradientTransformation:
    name = cfg["name"]
    exclude_1d = cfg["exclude_1d"] if cfg["exclude_1d"] is not None else name == "lars"
    mask = _ndim_gt1 if exclude_1d else None
    chain = []
    if cfg["weight_decay"]:
        chain.append(optax.add_decayed_weights(float(cfg["weight_decay"]), mask=mask))
    if name == "adam":
        chain.append(optax.scale_by_adam(b1=cfg["b1"], b2=cfg["b2"], eps=cfg["eps"]))
    else:
        if name == "lars":
            trust = optax.scale_by_trust_ratio(trust_coefficient=float(cfg["trust_coefficient"]))
            chain.append(optax.masked(trust, mask) if mask is not None else trust)
        if cfg["momentum"]:
            chain.append(optax.trace(decay=float(cfg["momentum"]), nesterov=bool(cfg["nesterov"])))
    chain.append(optax.scale_by_learning_rate(schedule))
    return optax.chain(*chain)


def param_path(path: tuple) -> str:
    """'/'-joined names of a key path (`jax.tree_util.tree_flatten_with_path`)."""
    parts = []
    for k in path:
        for attr in ("key", "name", "idx"):
            if hasattr(k, attr):
                parts.append(str(getattr(k, attr)))
                break
        else:
            parts.append(str(k))
    return "/".join(parts)


def _listed(paths: list[str]) -> str:
    shown = ", ".join(paths[:_MAX_LISTED_PATHS])
    more = len(paths) - _MAX_LISTED_PATHS
    return shown + (f", ... ({more} more)" if more > 0 else "")


def _labels(groups: Mapping[str, Mapping[str, Any]], params: Any, where: str) -> Any:
    """The tree of group names (`groups` keys, else 'default') of `params`' leaves: the labels
    `make_optimizer`'s `optax.multi_transform` uses.

    Raises `ConfigError` when a parameter matches two groups' regexes or a regex none."""
    compiled = {name: re.compile(g["regex"]) for name, g in groups.items()}
    leaves, treedef = jax.tree_util.tree_flatten_with_path(params)
    paths = [param_path(p) for p, _ in leaves]
    labels, used = [], dict.fromkeys(compiled, 0)
    for path in paths:
        hits = [name for name, rx in compiled.items() if rx.fullmatch(path)]
        if len(hits) > 1:
            regexes = {name: groups[name]["regex"] for name in hits}
            raise ConfigError(
                f"parameter {path!r} matches the regexes of config.{where}.param_groups {regexes}; "
                "make them disjoint (e.g. with a negative lookahead '(?!...)')"
            )
        for name in hits:
            used[name] += 1
        labels.append(hits[0] if hits else DEFAULT_GROUP)
    for name, n in used.items():
        if not n:
            raise ConfigError(
                f"config.{where}.param_groups.{name}.regex={groups[name]['regex']!r} matches no "
                f"parameter (fullmatch on '/'-joined paths); the paths are: {_listed(paths)}"
            )
    return jax.tree_util.tree_unflatten(treedef, labels)


def make_optimizer(
    optim_config: Any,
    *,
    total_steps: int,
    steps_per_epoch: int,
    global_batch_size: int,
    where: str = "optim",
) -> tuple[optax.GradientTransformation, optax.Schedule]:
    """`(transformation, lr schedule of the default group)` for `config.optim`.

    The schedule (what the trainer logs as the lr) is `_schedule`'s, whose docstring gives it.

    SGD (torch.optim.SGD, coupled weight decay, dampening 0):
      `g <- g + wd * p; buf <- mu * buf + g; p <- p - lr * buf`
      (nesterov: `p <- p - lr * (g + mu * buf)`).
    LARS (MoCo v3 / SCE `LARS`): for params with ndim > 1 (all params if not exclude_1d)
      `g <- g + wd * p; g <- g * eta * ||p|| / ||g||` (ratio 1 where a norm is 0), then as SGD.
    Adam (torch.optim.Adam, coupled weight decay): `g <- g + wd * p`, then `optax.scale_by_adam`.
    With `exclude_1d`, 1-D params (BN, biases) get neither weight decay nor the trust ratio.
    With `param_groups`, `optax.multi_transform` of one such transformation per group.
    `where` names the config block in error messages (e.g. 'probe.optim').
    """
    cfg = check_config(optim_config, where, global_batch_size=global_batch_size)
    steps = dict(
        total_steps=total_steps,
        steps_per_epoch=steps_per_epoch,
        global_batch_size=global_batch_size,
    )
    schedule = _schedule(cfg, **steps)
    tx = _transformation(cfg, schedule)
    if not cfg["param_groups"]:
        return tx, schedule
    transforms = {DEFAULT_GROUP: tx}
    for name, group in cfg["param_groups"].items():
        transforms[name] = _transformation(group, _schedule(group, **steps))
    groups = cfg["param_groups"]
    labels = lambda params: _labels(groups, params, where)
    return optax.multi_transform(transforms, labels), schedule


def ema_momentum_schedule(ema_config: Any, *, total_steps: int) -> Callable[[Any], jnp.ndarray]:
    """Momentum of the target (EMA) network at global step t (jnp-traceable), float32.

    constant: `m_t = m0`; cosine (BYOL): `m_t = 1 - (1 - m0) * (cos(pi * t / (T - 1)) + 1) / 2`,
    so `m_0 = m0` and `m_{T-1} = 1` (t clipped to [0, T - 1]), i.e. one minus
    `optax.cosine_decay_schedule(1 - m0, T - 1)`.
    """
    cfg = check_ema_config(ema_config)
    m0 = float(cfg["base"])
    if cfg["schedule"] == "constant":
        return lambda step: jnp.full((), m0, jnp.float32)
    last = max(total_steps - 1, 1)
    decay = optax.cosine_decay_schedule(init_value=1.0 - m0, decay_steps=last, exponent=1)

    def schedule(step):
        t = jnp.maximum(jnp.asarray(step, jnp.float32), 0.0)
        return jnp.asarray(1.0 - decay(t), jnp.float32)

    return schedule


def ema_update(target: Any, online: Any, momentum: Any) -> Any:
    """`target <- m * target + (1 - m) * online`, leaf by leaf (dtypes of `target` kept), as
    `optax.incremental_update(online, target, step_size=1 - m)`."""
    new = optax.incremental_update(new_tensors=online, old_tensors=target, step_size=1.0 - momentum)
    return jax.tree.map(lambda n, t: n.astype(t.dtype), new, target)
