"""experiments/view_studies.py (InfoMin's view studies) at `configs/views/studies.py:size=tiny`, and
what it is built on: the held-out I_NCE estimate and g's `raw` mode (the identity)."""

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ssl_jax import configs, view_learning
from ssl_jax.data.device import flow_views
from tests.data.data_helpers import make_fashion_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from experiments import view_studies  # noqa: E402


def _pairs(seed, shared: bool, k=32):
    """Endless (v1 [k, 8, 8, 1], v2 [k, 8, 8, 2]) of random images: v2 = (v1, v1) when `shared`,
    else independent of v1."""
    key = jax.random.PRNGKey(seed)
    while True:
        key, a, b = jax.random.split(key, 3)
        v1 = jax.random.normal(a, (k, 8, 8, 1))
        v2 = jnp.concatenate([v1, v1], -1) if shared else jax.random.normal(b, (k, 8, 8, 2))
        yield v1, v2


def test_i_nce_of_shared_views_is_high_and_of_independent_views_near_zero():
    kw = dict(steps=40, eval_batches=2, lr=3e-3, temperature=0.1)
    shared = view_learning.estimate_i_nce(_pairs(0, True), _pairs(1, True), **kw)
    apart = view_learning.estimate_i_nce(_pairs(0, False), _pairs(1, False), **kw)
    assert shared["log_k"] == pytest.approx(np.log(32))
    assert shared["i_nce"] > 0.5 * shared["log_k"], shared  # held-out: new images
    assert apart["i_nce"] < 0.3, apart  # nothing shared: nothing to find on unseen images
    assert shared["i_nce"] <= shared["log_k"]


def _sets(tmp_path):
    fashion = make_fashion_dir(str(tmp_path / "fashion"), num_train=64, num_test=32)
    return [f"data.data_dir={fashion}", f"data.color_fashion_mnist.cache_dir={tmp_path}/cache"]


def _study():
    return configs.load(os.path.join(ROOT, "configs/views/studies.py:size=tiny"))


@pytest.mark.slow
def test_table5_learns_g_runs_cmc_writes_table_and_plot_and_resumes(tmp_path, monkeypatch):
    """One cell (raw R|GB from RGB; a learned g's learn → CMC → probe is
    `test_view_learning.test_learn_freeze_cmc_probe_end_to_end`), 1 seed: the raw g is the
    identity (channel 0 of its views reads R only), the table has the paper's number beside ours,
    and a re-run trains nothing."""
    study, sets = _study(), _sets(tmp_path)
    study.table5.bases, study.table5.views = ("rgb",), ("raw",)
    workdir = str(tmp_path / "t5")
    table = view_studies.table5(study, [0], sets, workdir)
    assert "| RGB: raw (R\\|GB) |" in table and "| 81.5 ± 0.2 |" in table
    assert "| random init (CMC's encoders on RGB: raw (R\\|GB)) |" in table
    assert os.path.getsize(os.path.join(workdir, "table5.png")) > 1000
    results = json.load(open(os.path.join(workdir, "results.json")))
    assert set(results) == {"rgb/raw"}
    for (cell,) in results.values():
        assert 0 <= cell["probe"] <= 1 and cell["i_nce"] <= cell["log_k"] + 1e-6

    raw = flow_views.load_flow(os.path.join(workdir, "rgb_raw_s0", "g", "flow.npz"))
    rgb = jax.random.uniform(jax.random.PRNGKey(0), (4, 3, 3, 3))
    bumped = rgb.at[..., 1:].set(1 - rgb[..., 1:])  # G, B changed, R kept
    np.testing.assert_allclose(
        flow_views.apply_flow(raw, rgb)[..., 0],
        flow_views.apply_flow(raw, bumped)[..., 0],
        atol=1e-6,
    )

    from ssl_jax import train

    def no_training(*args, **kwargs):
        raise AssertionError("a finished cell was trained again")

    monkeypatch.setattr(train, "train_and_evaluate", no_training)
    monkeypatch.setattr(view_learning, "learn_views", no_training)
    monkeypatch.setattr(view_learning, "estimate_i_nce", no_training)
    assert view_studies.table5(study, [0], sets, workdir) == table


@pytest.mark.slow
def test_splits_and_reverse_u_write_tables_and_plots(tmp_path):
    """One colour split, and one value of each reverse-U knob (the strongest jitter x = 2.5)."""
    study, sets = _study(), _sets(tmp_path)
    study.splits = ("ydbdr",)
    table = view_studies.splits(study, [0], sets, str(tmp_path / "splits"))
    assert "| Y\\|DbDr |" in table and os.path.isfile(str(tmp_path / "splits" / "splits.png"))

    study.reverse_u.update(crop_low=(1.0,), jitter=(2.5,))
    config = view_studies.sweep_config(study, sets, 0, "jitter", 2.5)
    jitter = [op for op in config.data.recipes.mocov2 if op["op"] == "color_jitter"]
    assert jitter[0]["brightness"] == pytest.approx(2.0) and jitter[0]["hue"] == 0.5
    table = view_studies.reverse_u(study, [0], sets, str(tmp_path / "ru"))
    assert "| crop_low = 1.0 |" in table and "| jitter = 2.5 |" in table
    assert os.path.isfile(str(tmp_path / "ru" / "reverse_u.png"))
    with pytest.raises(ValueError, match="no 'gaussian_blur' op"):
        view_studies.with_op(config.data.recipes.mocov2, "gaussian_blur", p=1.0)


def test_patch_pairs_are_offset_by_d():
    side, patch, d = 40, 8, 12
    yy, xx = np.meshgrid(np.arange(side), np.arange(side), indexing="ij")
    photo = np.stack([yy, xx, np.zeros_like(yy)], -1)[None].astype(np.float32) / side
    v1, v2 = next(view_studies.patch_pairs(photo, patch, d, 5, (0.0,) * 3, (1.0,) * 3, 0))
    assert v1.shape == v2.shape == (5, patch, patch, 3)
    np.testing.assert_allclose(v2[..., :2] - v1[..., :2], d / side, atol=1e-6)
    np.testing.assert_allclose(v1[:, 1:, :, 0] - v1[:, :-1, :, 0], 1 / side, atol=1e-6)
    assert float(v2.max()) <= (side - 1) / side
    with pytest.raises(ValueError, match="exceeds"):
        next(view_studies.patch_pairs(photo, patch, side, 5, (0.0,) * 3, (1.0,) * 3, 0))


def test_patches_study_writes_table_and_plot(tmp_path):
    study, sets = _study(), _sets(tmp_path)
    table = view_studies.patches(study, [0], sets, str(tmp_path / "p"))
    assert "| d = 32 |" in table and "| d = 160 |" in table and "hubble_deep_field" in table
    assert os.path.isfile(str(tmp_path / "p" / "patches.png"))


def test_ridge_error_matches_a_direct_solve():
    """The position read-out: standardised features, l2 per row on the weights only, bias free;
    against the normal equations of the augmented design written out here."""
    rng = np.random.default_rng(0)
    x, x_test = rng.normal(2.0, 3.0, (40, 5)), rng.normal(2.0, 3.0, (10, 5))
    y, y_test = rng.normal(size=(40, 2)), rng.normal(size=(10, 2))
    l2 = 0.3
    mu, sd = x.mean(0), x.std(0) + 1e-6
    a = np.concatenate([(x - mu) / sd, np.ones((40, 1))], 1)
    reg = l2 * 40 * np.diag([1.0] * 5 + [0.0])
    w = np.linalg.solve(a.T @ a + reg, a.T @ y)
    b = np.concatenate([(x_test - mu) / sd, np.ones((10, 1))], 1)
    expected = np.mean(np.linalg.norm(b @ w - y_test, axis=1))
    got = view_studies.ridge_error(x, y, x_test, y_test, l2)
    assert got == pytest.approx(expected, rel=1e-5)
    exact = x @ rng.normal(size=(5, 2)) + 1.5  # a linear target is recovered as l2 → 0
    assert view_studies.ridge_error(x, exact, x, exact, 1e-12) < 1e-4


def test_scenes_paste_the_item_and_pairs_share_exactly_the_chosen_factors():
    items = np.zeros((3, 28, 28, 1), np.uint8)
    items[:, 2:5, 3:9] = 255
    photos = np.stack([np.full((40, 40, 3), v, np.float32) for v in (0.1, 0.2, 0.3, 0.4)])
    scenes = view_studies.Scenes(items, np.arange(3), photos, canvas=36, seed=0)
    f = scenes.factors(6)
    image = scenes.render(f)
    for n in range(6):
        top, left = f["position"][n]
        assert np.all(image[n, top + 2 : top + 5, left + 3 : left + 9] == 1.0)
        assert np.isclose(
            image[n].sum(), 3 * (18 + (36 * 36 - 18) * photos[f["background"][n, 0], 0, 0, 0])
        )

    seen = []
    render = scenes.render
    scenes.render = lambda f: seen.append(f) or render(f)
    next(scenes.pairs(("item", "position"), 64, (0.0,) * 3, (1.0,) * 3))
    a, b = seen
    assert np.array_equal(a["item"], b["item"]) and np.array_equal(a["position"], b["position"])
    assert not np.array_equal(a["background"], b["background"])


def test_task_dependence_study_writes_table_and_plot_and_resumes(tmp_path, monkeypatch):
    study, sets = _study(), _sets(tmp_path)
    table = view_studies.task_dependence(study, [0], sets, str(tmp_path / "td"))
    assert "| item | " in table and "| 16.8 / 88.6 / 13.6 |" in table
    assert "| background,position | " in table and "| 88.8 / 53.8 / 15.9 |" in table
    assert os.path.isfile(str(tmp_path / "td" / "task_dependence.png"))
    (cell,) = json.load(open(str(tmp_path / "td" / "results.json")))["item"]
    assert 0 <= cell["item_error"] <= 100 and cell["position_error"] > 0
    monkeypatch.setattr(view_learning, "estimate_i_nce", None)  # a finished cell is not re-run
    assert view_studies.task_dependence(study, [0], sets, str(tmp_path / "td")) == table


@pytest.mark.parametrize("size", ["small", "full"])
def test_every_size_builds_its_configs(size):
    """Every override of a size applies to the configs it is meant for (no training)."""
    study = configs.load(os.path.join(ROOT, f"configs/views/studies.py:size={size}"))
    assert len(study.seeds) >= 3
    for base in study.table5.bases:
        for mode in study.table5.views:
            spec = f"{view_studies._path(study.view_config)}:mode={mode},base={base}"
            view = view_studies.compare_methods.load_config(spec, study.view_sets, 0)
            assert view.mode == mode and view.num_labelled <= (view.data.train_subset or 60_000)
    for arg in ("flow=/no/flow.npz", *(f"space={s}" for s in study.splits if s != "rgb")):
        cmc = view_studies.cmc_config(study, [], 0, arg)
        assert cmc.method_config.bank_size == (cmc.data.train_subset or 60_000)
    for knob in ("crop_low", "jitter"):
        for value in study.reverse_u[knob]:
            moco = view_studies.sweep_config(study, [], 0, knob, value)
            assert moco.method_config.queue_size % moco.global_batch_size == 0
    with pytest.raises(ValueError, match="size="):
        configs.load(os.path.join(ROOT, "configs/views/studies.py:size=huge"))


def test_a_cache_from_an_older_version_is_recomputed(tmp_path, capsys):
    """A cell cache without every key the tables read (an older version's: no 'i_nce_train') is
    treated as absent, so the table never hits a KeyError; a current one is returned as is."""
    path = str(tmp_path / "cell.json")
    assert view_studies.load_cache(path) is None
    with open(path, "w") as f:
        json.dump({"i_nce": 0.3, "probe": 50.0}, f)
    assert view_studies.load_cache(path) is None
    assert "i_nce_train" in capsys.readouterr().out
    current = {"i_nce": 0.3, "i_nce_train": 0.4, "probe": 50.0}
    with open(path, "w") as f:
        json.dump(current, f)
    assert view_studies.load_cache(path) == current
