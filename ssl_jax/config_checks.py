"""Config errors and value checks: the leaf every module may import (it imports nothing of ssl_jax).

`ConfigError` is the one error for a bad config value; its message names the key and what is allowed.
`check_allowed` / `check_range` check one value; a method's `Hparams` dataclass states its fields'
ranges with `hp_field`, and `hparams_from_config` builds it from `config.method_config`.
`Validated` is what `validation.validate` returns: the proof, handed down to the job's entry
(`train.train_and_evaluate`, `jobs.prepare`), that the config was checked, so it is checked once.
"""

from __future__ import annotations

import dataclasses
import math
import typing

import ml_collections


class ConfigError(ValueError):
    """A config value is invalid; the message names the key and what is allowed."""


@dataclasses.dataclass(frozen=True)
class Validated:
    """`config` passed `validation.validate` on `num_devices` devices and `num_processes` processes,
    with what the checks built: the method's `hparams` (a pretraining job) and `evals`, the checked
    `(name, evaluator class, keys)` of `config.evals`. A job's entry given one checks nothing again;
    given none (a library call), it validates itself."""

    config: ml_collections.ConfigDict
    num_devices: int
    num_processes: int = 1
    hparams: typing.Any = None
    evals: tuple = ()
    snapshot: str = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "snapshot", repr(self.config.to_dict()))

    def require(self, config: ml_collections.ConfigDict, *, num_devices: int) -> Validated:
        """Itself when it is the proof for this `config` (the same object, unchanged since) on
        `num_devices` devices; otherwise a `ValueError` (a caller's mistake, not a config's)."""
        if (
            config is not self.config
            or num_devices != self.num_devices
            or repr(config.to_dict()) != self.snapshot
        ):
            raise ValueError(
                "`validated` was made for another config or device count, or the config changed "
                "after validation.validate; pass validated=None to validate this one"
            )
        return self


def check_allowed(key: str, value, allowed) -> None:
    """`ConfigError` unless `value` is one of `allowed`: `config.<key>=<value> is not allowed; ...`."""
    if value not in allowed:
        raise ConfigError(f"config.{key}={value!r} is not allowed; allowed values: {list(allowed)}")


def _interval(low, high, low_open: bool, high_open: bool) -> str:
    left = "(" if low is None or low_open else "["
    right = ")" if high is None or high_open else "]"
    lo = "-inf" if low is None else repr(low)
    hi = "inf" if high is None else repr(high)
    return f"{left}{lo}, {hi}{right}"


def _in_range(value, low, high, low_open: bool, high_open: bool) -> bool:
    if low is not None and (value <= low if low_open else value < low):
        return False
    return not (high is not None and (value >= high if high_open else value > high))


def check_range(
    key: str,
    value,
    *,
    low=None,
    high=None,
    low_open: bool = False,
    high_open: bool = False,
    integer: bool = False,
) -> None:
    """One-line `ConfigError` unless `value` is a number (an int with `integer`) in the interval:
    `config.<key>=<value>: allowed <interval>`."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or (integer and not isinstance(value, int)):
        kind = "an int" if integer else "a number"
        raise ConfigError(
            f"config.{key}={value!r}: allowed {kind} in {_interval(low, high, low_open, high_open)}"
        )
    if (isinstance(value, float) and math.isnan(value)) or not _in_range(
        value, low, high, low_open, high_open
    ):
        raise ConfigError(
            f"config.{key}={value!r}: allowed {_interval(low, high, low_open, high_open)}"
        )


def hp_field(
    default,
    *,
    low=None,
    high=None,
    low_open: bool = False,
    high_open: bool = False,
    choices=None,
):
    """A method `Hparams` field with its allowed values, checked by `hparams_from_config`:
    `temperature: float = hp_field(0.2, low=0.0, low_open=True)` (τ in (0, inf)), `choices=('a', 'b')`
    for a string. The bounds are inclusive unless `*_open`; None is unbounded."""
    metadata = {"ssl_jax_range": (low, high, low_open, high_open)}
    if choices is not None:
        metadata["ssl_jax_choices"] = tuple(choices)
    return dataclasses.field(default=default, metadata=metadata)


def _check_hp_field(field: dataclasses.Field, value) -> None:
    key = f"method_config.{field.name}"
    choices = field.metadata.get("ssl_jax_choices")
    if choices is not None:
        check_allowed(key, value, choices)
    low, high, low_open, high_open = field.metadata.get("ssl_jax_range", (None,) * 2 + (False,) * 2)
    if low is not None or high is not None:
        check_range(key, value, low=low, high=high, low_open=low_open, high_open=high_open)


# keys of earlier versions, with what replaced them (a clear error for an old config)
RENAMED_HPARAMS = {
    "key_bn_groups": "BN groups are counted in images now, not in devices: "
    "key_bn_group_size = global_batch_size / groups (0 = the whole batch, SyncBN), and "
    "query_bn_group_size for the online encoder (methods/common.py QueryKeyBN)",
}


def hparams_from_config(hparams_cls, config: ml_collections.ConfigDict):
    """Build a method's frozen `Hparams` from `config.method_config`, rejecting unknown keys, types
    and values outside a field's `hp_field` range or choices (given values and defaults alike)."""
    fields = {f.name: f for f in dataclasses.fields(hparams_cls)}
    hints = typing.get_type_hints(hparams_cls)
    kwargs = {}
    for key, value in config.method_config.items():
        if key in RENAMED_HPARAMS and key not in fields:
            raise ConfigError(f"config.method_config.{key} was removed: {RENAMED_HPARAMS[key]}")
        if key not in fields:
            raise ConfigError(
                f"config.method_config.{key} is not a field of method {config.method!r}; "
                f"allowed keys: {sorted(fields)}"
            )
        expected = hints[key]
        origin = typing.get_origin(expected) or expected
        if origin is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if origin in (int, float, bool, str) and not isinstance(value, origin):
            raise ConfigError(
                f"config.method_config.{key}={value!r} has type {type(value).__name__}; "
                f"expected {origin.__name__}"
            )
        if origin is tuple and isinstance(value, list):
            value = tuple(value)
        kwargs[key] = value
    hparams = hparams_cls(**kwargs)
    for field in fields.values():
        _check_hp_field(field, getattr(hparams, field.name))
    return hparams
