"""`import ssl_jax` puts its XLA:CPU flag defaults (`ssl_jax.XLA_FLAG_DEFAULTS`) in XLA_FLAGS
before any backend starts, keeps the user's other flags, and never overrides a flag the user set."""

import os
import subprocess
import sys

import pytest

import ssl_jax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _flags_after_import(xla_flags):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if xla_flags is not None:
        env["XLA_FLAGS"] = xla_flags
    code = "import os, ssl_jax; print(os.environ['XLA_FLAGS'])"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


@pytest.mark.parametrize(
    "given, expected",
    [
        (None, " ".join(ssl_jax.XLA_FLAG_DEFAULTS)),
        (
            "--xla_force_host_platform_device_count=8",
            "--xla_force_host_platform_device_count=8 " + " ".join(ssl_jax.XLA_FLAG_DEFAULTS),
        ),
        ("--xla_cpu_experimental_ynn_fusion_type=", "--xla_cpu_experimental_ynn_fusion_type="),
    ],
    ids=["unset", "other flags kept", "user's own value wins"],
)
def test_flag_defaults(given, expected):
    assert _flags_after_import(given) == expected


def test_the_flag_reaches_the_backend_of_this_test_session():
    """The suite's processes run with it (conftest imports ssl_jax before any backend starts), and
    XLA accepts it (an unknown flag would abort the backend's start)."""
    import jax

    assert ssl_jax.XLA_FLAG_DEFAULTS[0] in os.environ["XLA_FLAGS"]
    assert jax.devices()[0].platform == "cpu"


@pytest.mark.parametrize(
    "code, warns",
    [
        ("import jax; jax.devices(); import ssl_jax", True),
        ("import ssl_jax, jax; jax.devices(); import ssl_jax.models", False),
        ("import jax; import ssl_jax; jax.devices()", False),
    ],
    ids=["after the backend started", "before jax", "after import jax, before its backend"],
)
def test_a_late_import_warns_that_the_flags_missed_the_backend(code, warns):
    """Imported after JAX's CPU backend started, the defaults cannot take effect: say so (a
    benchmark that called `jax.devices()` first timed YNNPACK's convolutions, 2026-11-25, commit a422de6)."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    out = subprocess.run(
        [sys.executable, "-W", "always", "-c", code],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert ("did not take effect" in out.stderr) == warns
