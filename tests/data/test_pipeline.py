"""Input pipeline: determinism, exact resume, process sharding, eval padding, configs, a PNG
grid."""

import dataclasses
import itertools
import os

import numpy as np
import pytest
from PIL import Image

from ssl_jax.data import datasets, pipeline, recipe_ops, recipes, train_split
from ssl_jax.data.sources import fashion_mnist
from tests.data.data_helpers import make_config, make_fashion_dir, mock_tfds

NUM_TRAIN, NUM_TEST, BATCH = 64, 40, 8  # 8 steps per epoch


@pytest.fixture(scope="module")
def fashion_dir(tmp_path_factory):
    return make_fashion_dir(str(tmp_path_factory.mktemp("fashion")), NUM_TRAIN, NUM_TEST)


def _config(data_dir, **overrides):
    """Small Fashion-MNIST-layout config with a weak (crop + flip) 16-px view; the strong view (MoCo
    v2 with blur) takes longer to trace, so only the tests about augmentation use it."""
    top = {k: overrides.pop(k) for k in ("seed", "global_batch_size") if k in overrides}
    overrides.setdefault("views", ("weak",))
    overrides.setdefault("recipes", {"strong": recipes.mocov2(16), "weak": recipes.weak(16)})
    return make_config(
        data_dir,
        global_batch_size=top.get("global_batch_size", BATCH),
        seed=top.get("seed", 0),
        **overrides,
    )


def _take(it, n):
    return list(itertools.islice(it, n))


def _assert_same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x["index"], y["index"])
        np.testing.assert_array_equal(x["label"], y["label"])
        for vx, vy in zip(x["views"], y["views"]):
            np.testing.assert_array_equal(vx, vy)


@pytest.fixture(params=["random_access", "streaming"])
def access(request, monkeypatch):
    """Run a test on both paths: the streaming one by hiding the source's random access."""
    if request.param == "streaming":
        original = datasets.open_source

        def streaming(data_config, split):
            return dataclasses.replace(original(data_config, split), lookup=None)

        monkeypatch.setattr(datasets, "open_source", streaming)
    return request.param


def test_batches_shapes_and_determinism(fashion_dir):
    config = _config(fashion_dir, views=("strong", "weak"))
    first = _take(pipeline.train_iterator(config), 3)
    batch = first[0]
    assert set(batch) == {"views", "index", "label"}
    assert [v.shape for v in batch["views"]] == [(BATCH, 16, 16, 3)] * 2
    assert all(v.dtype == np.uint8 for v in batch["views"])
    assert batch["index"].dtype == np.int32 and batch["label"].dtype == np.int32
    np.testing.assert_array_equal(batch["label"], batch["index"] % 10)
    _assert_same(first, _take(pipeline.train_iterator(config), 3))
    other = _take(
        pipeline.train_iterator(_config(fashion_dir, seed=1, views=("strong", "weak"))), 1
    )[0]
    assert not np.array_equal(other["index"], batch["index"])
    # The two views of one example differ, and so do two epochs' views of one example.
    assert not np.array_equal(batch["views"][0], batch["views"][1])


def test_resume_is_exact_across_an_epoch_boundary(fashion_dir, access):
    views = ("strong", "weak") if access == "random_access" else ("weak",)
    config = _config(fashion_dir, shuffle_buffer=NUM_TRAIN, views=views)
    steps = train_split.steps_per_epoch(config)
    assert steps == NUM_TRAIN // BATCH
    full = _take(pipeline.train_iterator(config), steps + 3)
    resumed = _take(pipeline.train_iterator(config, start_step=steps - 1), 4)
    _assert_same(full[steps - 1 :], resumed)
    epoch0 = np.concatenate([b["index"] for b in full[:steps]])
    assert sorted(epoch0) == list(range(NUM_TRAIN))  # a permutation: every example once
    epoch1 = np.concatenate([b["index"] for b in full[steps:]])
    assert not np.array_equal(epoch0[: len(epoch1)], epoch1)  # reshuffled per epoch


def test_process_shards_are_disjoint_and_cover(fashion_dir, access):
    config = _config(fashion_dir, shuffle_buffer=NUM_TRAIN)
    steps = train_split.steps_per_epoch(config)
    shards = [
        _take(pipeline.train_iterator(config, process_index=p, process_count=2), steps)
        for p in range(2)
    ]
    assert all(b["views"][0].shape == (BATCH // 2, 16, 16, 3) for s in shards for b in s)
    seen = [np.concatenate([b["index"] for b in s]) for s in shards]
    assert not set(seen[0]) & set(seen[1])
    assert sorted(np.concatenate(seen)) == list(range(NUM_TRAIN))
    if access == "random_access":  # the global batch does not depend on the process count
        single = _take(pipeline.train_iterator(config), steps)
        for t in range(steps):
            together = np.concatenate([shards[0][t]["index"], shards[1][t]["index"]])
            np.testing.assert_array_equal(together, single[t]["index"])
    resumed = _take(
        pipeline.train_iterator(config, start_step=3, process_index=1, process_count=2), 2
    )
    _assert_same(shards[1][3:5], resumed)


def test_train_subset_and_batch_errors(fashion_dir):
    config = _config(fashion_dir, train_subset=20)
    assert train_split.steps_per_epoch(config) == 2
    batches = _take(pipeline.train_iterator(config), 6)
    assert max(int(b["index"].max()) for b in batches) < 20
    with pytest.raises(ValueError, match="larger than"):
        train_split.steps_per_epoch(_config(fashion_dir, global_batch_size=128))
    with pytest.raises(ValueError, match="divisible"):
        pipeline.train_iterator(_config(fashion_dir, global_batch_size=6), process_count=4)


def test_eval_iterator_pads_masks_and_covers_once(fashion_dir):
    config = _config(fashion_dir)
    source = {
        int(e["index"]): e for e in datasets.load_source(config.data, "test").as_numpy_iterator()
    }
    batches = list(pipeline.eval_iterator(config, "test", batch_size=16))
    assert [int(b["mask"].sum()) for b in batches] == [16, 16, 8]
    last = batches[-1]
    assert (last["label"][~last["mask"]] == -1).all() and (last["image"][~last["mask"]] == 0).all()
    # Native size: pixels pass through untouched, gray copied to 3 channels.
    for b in batches:
        for image, index, valid in zip(b["image"], b["index"], b["mask"]):
            if valid:
                np.testing.assert_array_equal(
                    image, np.repeat(source[int(index)]["image"], 3, axis=-1)
                )
    shards = [
        list(
            pipeline.eval_iterator(config, "test", batch_size=16, process_index=p, process_count=3)
        )
        for p in range(3)
    ]
    assert [len(s) for s in shards] == [1, 1, 1]  # same number of batches on every process
    indices = np.concatenate([b["index"][b["mask"]] for s in shards for b in s])
    assert sorted(indices) == list(range(NUM_TEST))


def test_eval_resize_and_crop(fashion_dir):
    config = _config(fashion_dir, image_size=24, eval_crop_fraction=0.875, channels=1)
    batch = next(iter(pipeline.eval_iterator(config, "test", batch_size=8)))
    assert batch["image"].shape == (8, 24, 24, 1) and batch["image"].dtype == np.uint8


def test_one_channel_views_and_recipe_errors(fashion_dir):
    config = _config(
        fashion_dir, channels=1, views=("fm",), recipes={"fm": recipes.fashion_mnist_default(20)}
    )
    batch = next(pipeline.train_iterator(config))
    assert batch["views"][0].shape == (BATCH, 20, 20, 1)
    with pytest.raises(ValueError, match=r"recipe 'strong' op 1 \(color_jitter\): saturation"):
        pipeline.train_iterator(_config(fashion_dir, channels=1, views=("strong",)))
    with pytest.raises(ValueError, match="not in config.data.recipes"):
        pipeline.train_iterator(_config(fashion_dir, views=("nope",)))


def test_device_ops_leave_only_geometry_on_the_host(fashion_dir):
    config = _config(fashion_dir, device_ops=True, views=("strong",))
    host = pipeline._recipes(config)
    assert all(op["op"] in recipe_ops.HOST_OPS for _, recipe in host for op in recipe)
    assert [op["op"] for op in host[0][1]] == ["random_resized_crop", "horizontal_flip"]
    batch = next(pipeline.train_iterator(config))
    assert batch["views"][0].shape == (BATCH, 16, 16, 3)


def test_image_folder_pipeline(tmp_path):
    rng = np.random.default_rng(0)
    for k, (w, h) in enumerate([(20, 30), (64, 48), (17, 17), (200, 180), (40, 40), (33, 90)]):
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(tmp_path / f"{k}.png")
    config = _config(str(tmp_path), name="image_folder", global_batch_size=2)
    batches = _take(pipeline.train_iterator(config), 4)
    assert all(v.shape == (2, 16, 16, 3) for b in batches for v in b["views"])
    assert all((b["label"] == -1).all() for b in batches)
    _assert_same(batches[2:], _take(pipeline.train_iterator(config, start_step=2), 2))
    evals = list(
        pipeline.eval_iterator(
            _config(str(tmp_path), name="image_folder", image_size=16), "train", batch_size=4
        )
    )
    assert [int(b["mask"].sum()) for b in evals] == [4, 2] and evals[0]["image"].shape == (
        4,
        16,
        16,
        3,
    )
    flip_only = {"flip": ({"op": "horizontal_flip", "p": 0.5},)}
    with pytest.raises(ValueError, match="varying size"):
        pipeline.train_iterator(
            _config(
                str(tmp_path),
                name="image_folder",
                global_batch_size=2,
                views=("flip",),
                recipes=flip_only,
            )
        )


@pytest.mark.parametrize("cache", [False, True])
def test_tfds_pipeline(tmp_path, cache):
    config = _config(str(tmp_path), name="cifar10", global_batch_size=2, cache=cache, image_size=32)
    with mock_tfds(6):
        batches = _take(pipeline.train_iterator(config), 4)
        evals = list(pipeline.eval_iterator(config, "test", batch_size=4))
    assert all(v.shape == (2, 16, 16, 3) for b in batches for v in b["views"])
    assert sorted(np.concatenate([b["index"] for b in batches[:3]])) == list(range(6))
    assert [int(b["mask"].sum()) for b in evals] == [4, 2] and evals[0]["image"].shape == (
        4,
        32,
        32,
        3,
    )


@pytest.mark.skipif(
    not os.path.isfile(os.path.join(fashion_mnist.FASHION_MNIST_DIR, "train-images-idx3-ubyte.gz")),
    reason="dataset-fashion-mnist not installed",
)
def test_png_grid_of_views(tmp_path):
    """Real Fashion-MNIST through the MoCo v2 recipe at 28 px: a grid of (original, view 0, view
    1)."""
    config = _config("", views=("moco", "moco"), recipes={"moco": recipes.mocov2(28)})
    batch = next(pipeline.train_iterator(config))
    images = datasets.open_source(config.data, "train")
    rows = []
    for k in range(BATCH):
        original = images.lookup(int(batch["index"][k]))["image"].numpy()
        rows.append(
            np.concatenate(
                [np.repeat(original, 3, -1), batch["views"][0][k], batch["views"][1][k]], axis=1
            )
        )
        assert not np.array_equal(batch["views"][0][k], batch["views"][1][k])
    grid = np.concatenate(rows, axis=0)
    path = tmp_path / "views.png"
    Image.fromarray(grid).resize((grid.shape[1] * 4, grid.shape[0] * 4), Image.NEAREST).save(path)
    assert path.stat().st_size > 0
    assert Image.open(path).size == (28 * 3 * 4, 28 * BATCH * 4)


def test_multi_view_decodes_each_image_once(tmp_path, monkeypatch):
    """Multi-crop (issue 18 item 5): the per-example map decodes the encoded image once and cuts
    every view from it. The decode is counted where it enters the traced graph: one call per trace
    whatever the number of views (a decode per view would trace it three times)."""
    rng = np.random.default_rng(0)
    for k, (w, h) in enumerate([(40, 30), (64, 48), (37, 41), (50, 60)]):
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(tmp_path / f"{k}.jpg")
    traced = []
    original = datasets.open_source

    def counting(data_config, split):
        src = original(data_config, split)

        def decode(image):
            traced.append(1)
            return src.decode(image)

        return dataclasses.replace(src, decode=decode)

    monkeypatch.setattr(datasets, "open_source", counting)
    config = _config(str(tmp_path), name="image_folder", global_batch_size=2, views=("weak",) * 3)
    batch = next(pipeline.train_iterator(config))
    assert len(batch["views"]) == 3 and len(traced) == 1


@pytest.mark.parametrize("how", ["closed", "exhausted"])
def test_a_tf_data_iterator_is_released_on_a_thread_of_its_own(how):
    """The numpy iterator of a closed or exhausted `_to_numpy` is released on the 'tf.data release'
    thread, not by the caller (TensorFlow's release of an autotuned iterator can block for seconds
    on a busy host), and released: nothing keeps it."""
    import threading
    import weakref

    import tensorflow as tf

    batches = pipeline._to_numpy(tf.data.Dataset.range(6).batch(2).prefetch(tf.data.AUTOTUNE))
    assert next(batches).tolist() == [0, 1]
    released_on = []
    weakref.finalize(batches.gi_yieldfrom, lambda: released_on.append(threading.current_thread()))
    if how == "closed":
        batches.close()
    else:
        assert [b.tolist() for b in batches] == [[2, 3], [4, 5]]
    for thread in threading.enumerate():
        if thread.name == "tf.data release":
            thread.join(timeout=60)
    assert [t.name for t in released_on] == ["tf.data release"]
