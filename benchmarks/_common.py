"""Shared set-up of the benchmark scripts."""

from __future__ import annotations

import os


def simulate_devices(count: int) -> None:
    """Ask XLA:CPU for `count` host devices (`--xla_force_host_platform_device_count`). Call it
    before jax is imported; a count already in XLA_FLAGS is kept."""
    flags = os.environ.get("XLA_FLAGS", "")
    if count > 1 and "xla_force_host_platform_device_count" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={count}".strip()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
