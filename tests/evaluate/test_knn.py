"""Sharded weighted kNN against the host reference, and the knn job."""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from configs import knn as knn_config
from ssl_jax.evaluate import knn
from ssl_jax.evaluate.encoder import ShardedFeatures
from ssl_jax.parallel import sharding


def _sharded(features, labels, mesh, rows):
    """Host arrays → the `[nb, G, D]` layout of `sharded_split_features`, padded and masked."""
    n, d = features.shape
    nb = -(-n // rows)
    f = np.zeros((nb * rows, d), np.float32)
    y = np.full((nb * rows,), -1, np.int32)
    m = np.zeros((nb * rows,), bool)
    f[:n], y[:n], m[:n] = features, labels, True
    spec = lambda *s: NamedSharding(mesh, P(None, sharding.DATA_AXIS, *s))
    return ShardedFeatures(
        jax.device_put(f.reshape(nb, rows, d), spec(None)),
        jax.device_put(y.reshape(nb, rows), spec()),
        jax.device_put(m.reshape(nb, rows), spec()),
    )


@pytest.mark.parametrize("num_devices", [1, 8])
def test_sharded_matches_host_reference(num_devices):
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(6, 16))
    train_y = rng.integers(0, 6, 203)
    test_y = rng.integers(0, 6, 61)
    train_f = centres[train_y] + 1.5 * rng.normal(size=(203, 16))
    test_f = centres[test_y] + 1.5 * rng.normal(size=(61, 16))
    mesh = sharding.make_mesh(jax.devices()[:num_devices])
    memory = _sharded(train_f, train_y, mesh, rows=32)  # 203 rows: the last batch is padding
    queries = _sharded(test_f, test_y, mesh, rows=16)
    assert memory.features.sharding.spec == P(None, "data", None)
    result = knn.sharded_weighted_knn(memory, queries, mesh=mesh, ks=(5, 20, 200), temperature=0.1)
    for k in (5, 20, 200):
        ref = knn.weighted_knn(train_f, train_y, test_f, test_y, k=k, temperature=0.1)
        assert result[k]["top1"] == pytest.approx(ref["top1"], abs=1e-9), k
        assert result[k]["top5"] == pytest.approx(ref["top5"], abs=1e-9), k
    assert queries.num_valid == 61


def test_each_device_keeps_its_rows():
    mesh = sharding.make_mesh()
    f = np.arange(64 * 4, dtype=np.float32).reshape(64, 4)
    memory = _sharded(f, np.zeros(64, np.int32), mesh, rows=16)
    shards = memory.features.addressable_shards
    assert len(shards) == 8 and {s.data.shape for s in shards} == {(4, 2, 4)}
    assert float(jnp.sum(memory.mask)) == 64


def test_knn_job(pretrained_workdir, tmp_path):
    config = knn_config.get_config("runlocal")
    config.init = pretrained_workdir
    config.knn.num_train = 200
    config.knn.num_test = 50  # not a multiple of the 8 x 16 global batch: padding is masked
    config.knn.batch_size = 16
    config.knn.ks = (5, 20)
    out = str(tmp_path / "knn")
    record = knn.run(config, out)
    assert record["num_train"] == 200 and record["num_test"] == 50
    assert 0.0 <= record["knn/top1_k20"] <= record["knn/top5_k20"] <= 1.0
    with open(os.path.join(out, "knn_result.json")) as f:
        assert json.load(f)["knn/top1_k5"] == record["knn/top1_k5"]
    with open(os.path.join(out, "metrics.jsonl")) as f:
        logged = json.loads(f.readline())
    assert logged["step"] == 2 and "knn/top5_k20" in logged
