"""`benchmarks/peer.py --print-numbers`: the `--numbers` JSON the peer side takes, printed by the
ssl_jax side without importing the peer (torch, lightly) or compiling anything."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PRINT_NUMBERS = """
import sys
sys.path.insert(0, 'benchmarks')
import peer
sys.argv = ['peer.py', '--print-numbers', '--shape=' + sys.argv[1]]
peer.main()
assert not {'torch', 'torchvision', 'lightly'} & set(sys.modules), sorted(sys.modules)
"""


@pytest.mark.parametrize("shape, size, channels", [("fashion28", 28, 1), ("color32", 32, 3)])
def test_print_numbers(shape, size, channels):
    out = subprocess.run(
        [sys.executable, "-c", PRINT_NUMBERS, shape],
        cwd=ROOT,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    numbers = json.loads(out.stdout)  # the whole output: what --numbers="$(...)" passes
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import peer

    config = peer.jax_config(shape)
    assert config.global_batch_size == peer.COMMON["batch"]
    assert numbers == json.loads(json.dumps(peer.config_numbers(config)))
    assert (numbers["size"], numbers["channels"], len(numbers["mean"])) == (
        size,
        channels,
        channels,
    )
    assert set(numbers) == {"size", "channels", "mean", "std", "ema", "lr", "weight_decay"}
