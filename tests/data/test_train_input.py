"""The loop's input (`data/train_input.py`) and the train split's facts (`data/train_split.py`): one
mode from the three data keys, decided without reading the split; one epoch rule."""

import jax
import pytest

from ssl_jax import train
from ssl_jax.data import datasets, device_pipeline, train_input, train_split
from ssl_jax.parallel import sharding
from tests.helpers import tiny_config


def _refuse_reading(monkeypatch):
    """Every way of reading the split's pixels raises."""

    def refuse(*args, **kwargs):
        raise AssertionError("the split was read")

    for name in ("load_arrays", "open_source", "load_source", "first_images"):
        monkeypatch.setattr(datasets, name, refuse)


def test_building_an_experiment_reads_no_data(monkeypatch):
    """`data.pipeline='auto'` and the abstract batch take the split's size and shape from its row
    count and known image shape: `build_experiment` reads no pixel."""
    config = tiny_config()
    config.data.pipeline = "auto"
    monkeypatch.setattr(device_pipeline, "device_memory", lambda device=None: 10**9)
    _refuse_reading(monkeypatch)
    exp = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    assert exp.input.mode == train_input.DEVICE_TABLE
    assert exp.input.num_train == 64 and exp.ctx.num_train_examples == 64
    assert exp.input.abstract_batch()["images"].shape == (64, 28, 28, 1)
    monkeypatch.setattr(device_pipeline, "device_memory", lambda device=None: 64 * 28 * 28 * 3)
    assert train.build_experiment(config).input.mode == train_input.HOST_VIEWS  # > a quarter


@pytest.mark.parametrize(
    "keys, mode",
    [
        (dict(pipeline="tfdata", device_ops=False, device_crops=0), train_input.HOST_VIEWS),
        (dict(pipeline="tfdata", device_ops=True, device_crops=0), train_input.HOST_CROPS),
        (dict(pipeline="tfdata", device_ops=True, device_crops=32), train_input.HOST_CANVASES),
        (dict(pipeline="device", device_ops=True, device_crops=32), train_input.DEVICE_TABLE),
    ],
)
def test_the_three_keys_resolve_to_one_mode_and_its_batch(monkeypatch, keys, mode):
    config = tiny_config()
    config.data.update(keys)
    _refuse_reading(monkeypatch)
    inputs = train_input.TrainInput.build(config, sharding.make_mesh(jax.devices()[:1]))
    assert inputs.mode == mode
    batch = inputs.abstract_batch()
    pixels = {
        train_input.HOST_VIEWS: {"views"},
        train_input.HOST_CROPS: {"views"},
        train_input.HOST_CANVASES: {"canvas", "boxes", "flips"},
        train_input.DEVICE_TABLE: {"images"},
    }[mode]
    assert set(batch) == pixels | {"index", "label"}
    if mode == train_input.DEVICE_TABLE:  # the table replicated, the rows sharded
        assert set(inputs.shardings()) == set(batch)


def test_the_epoch_rule():
    """`num_train // global_batch_size`, the remainder dropped; a split smaller than one batch
    has no epoch (the pipelines refuse it) but the schedules count one step."""
    config = tiny_config()  # 64 rows (train_subset), batch 16
    assert train_split.num_train(config) == 64
    assert train_split.steps_per_epoch(config) == 4
    assert train_split.steps_per_epoch(config, 79) == 4
    config.global_batch_size = 128
    with pytest.raises(ValueError, match="exceeds the 64 training examples"):
        train_split.steps_per_epoch(config)
    assert train_split.schedule_steps_per_epoch(config, 64) == 1
    config.data.train_subset = 0
    assert train_split.num_train(config) == datasets.num_examples(config.data, "train")
