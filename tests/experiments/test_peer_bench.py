"""`experiments/peer.py --print-numbers`: the `--numbers` JSON the peer side takes, printed by the
ssl_jax side without importing the peer (torch, lightly) or compiling anything, and with
`--jax-override` (ablations of the ssl_jax side) the overridden config's; the probe's pretraining
budget (`--probe-seconds` or `--probe-steps`)."""

import json
import os
import subprocess
import sys
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PRINT_NUMBERS = """
import sys
import types
from experiments import peer
sys.argv = ['peer.py', '--print-numbers', '--shape=' + sys.argv[1], *sys.argv[2:]]
peer.main()
assert not {'torch', 'torchvision', 'lightly'} & set(sys.modules), sorted(sys.modules)
"""


def _print_numbers(shape: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", PRINT_NUMBERS, shape, *extra],
        cwd=ROOT,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("shape, size, channels", [("fashion28", 28, 1), ("color32", 32, 3)])
def test_print_numbers(shape, size, channels):
    out = _print_numbers(shape)
    assert out.returncode == 0, out.stderr[-3000:]
    numbers = json.loads(out.stdout)  # the whole output: what --numbers="$(...)" passes
    from experiments import peer

    config = peer.jax_config(shape)
    assert config.global_batch_size == peer.COMMON["batch"]
    assert numbers == json.loads(json.dumps(peer.config_numbers(config)))
    assert (numbers["size"], numbers["channels"], len(numbers["mean"])) == (
        size,
        channels,
        channels,
    )
    assert set(numbers) == {"size", "channels", "mean", "std", "ema", "lr", "weight_decay"}


def test_jax_override_reaches_the_ssl_jax_config():
    base = json.loads(_print_numbers("color32").stdout)
    out = _print_numbers("color32", "--jax-override", "ema.base=0.95", "seed=3")
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout) == {**base, "ema": 0.95}
    from experiments import peer

    overrides = ("seed=3", "method_config.key_bn_group_size=64", "method_config.shuffle_bn=False")
    config = peer.jax_config("color32", overrides)
    assert (config.seed, config.method_config.key_bn_group_size) == (3, 64)
    assert config.method_config.shuffle_bn is False
    bad = _print_numbers("color32", "--jax-override", "seed")
    assert bad.returncode != 0 and "key=value" in bad.stderr


def test_probe_budget_in_seconds_or_steps():
    from experiments import peer

    class Side:  # counts what `pretrain` asks of a side
        def __init__(self):
            self.calls = []

        def reset(self):
            self.calls.append("reset")

        def run(self, steps, what):
            self.calls.append((steps, what))

    def budget(seconds=0.0, steps=0):
        return peer.probe_budget(types.SimpleNamespace(probe_seconds=seconds, probe_steps=steps))

    assert budget() is None
    assert (budget(seconds=180), budget(steps=128)) == ("180s", "128")
    with pytest.raises(SystemExit, match="not both"):
        budget(seconds=180, steps=128)
    side = Side()
    assert peer.pretrain(side, budget(steps=5))["steps"] == 5
    assert side.calls == ["reset"] + [(1, "loop")] * 5
    done = peer.pretrain(Side(), budget(seconds=0.05))
    assert done["steps"] > 5 and 0.05 <= done["seconds"] < 5
