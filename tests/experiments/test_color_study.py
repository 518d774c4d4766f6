"""experiments/color_study.py: the data-set variants, the swap test and the crop statistics."""

import numpy as np
import pytest

from experiments import color_study as cs
from ssl_jax import configs
from ssl_jax.data.sources import color_fashion_mnist as cfm


def _items(n=6, seed=0):
    rng = np.random.default_rng(seed)
    items = np.zeros((n, 28, 28), np.uint8)
    for i in range(n):  # a filled rectangle per item, different places
        top, left = rng.integers(0, 14, 2)
        items[i, top : top + 10, left : left + 12] = 255
    return items


@pytest.fixture
def fake_photos(monkeypatch):
    """A deterministic photo bank (no scikit-image needed): 3 'photos' of smooth colour ramps."""

    def bank(names, side):
        r = np.linspace(0, 1, side, dtype=np.float32)
        out = []
        for k in range(len(names)):
            img = np.stack(np.broadcast_arrays(r[:, None], r[None, :], np.float32(k / 3)), -1)
            out.append(np.roll(img, 5 * k, axis=2))
        return np.stack(out).astype(np.float32)

    monkeypatch.setattr(cfm, "photo_bank", bank)
    return cfm.Options(backgrounds=("astronaut", "chelsea", "coffee"), background_crop=0.5)


def test_full_variant_is_the_generators_image(fake_photos):
    items = _items()
    p = cs.parts(items, fake_photos, "train")
    v = cs.variants(p)
    np.testing.assert_array_equal(v["full"], cfm.generate(items, fake_photos, "train")["image"])
    assert v["full"].shape == (6, 32, 32, 3) and v["full"].dtype == np.uint8


def test_item_only_and_background_only(fake_photos):
    items = _items()
    p = cs.parts(items, fake_photos, "test")
    v = cs.variants(p)
    outside = p["alpha"] == 0
    assert np.all(v["item_only"][outside] == 128)  # grey 0.5 where there is no item
    inside = p["alpha"] == 1
    tint = np.round(p["tint"] * 255).astype(np.uint8)
    for i in range(len(items)):
        assert np.all(v["item_only"][i][inside[i]] == tint[i])
    np.testing.assert_array_equal(
        v["background_only"], np.round(p["background"] * 255).astype(np.uint8)
    )
    # where the item is absent the full image is the background
    np.testing.assert_array_equal(v["full"][outside], v["background_only"][outside])


def test_swaps_change_one_factor(fake_photos):
    items = _items()
    p = cs.parts(items, fake_photos, "test")
    perm = cs.derangement(np.random.default_rng(0), len(items))
    assert np.all(perm != np.arange(len(items))) and sorted(perm) == list(range(len(items)))
    s = cs.swaps(p, perm)
    v = cs.variants(p)
    q = {k: x[perm] for k, x in p.items()}
    np.testing.assert_array_equal(s["whole"], cs.variants(q)["full"])
    np.testing.assert_array_equal(
        s["background"], cs.compose(p["alpha"], p["tint"], p["background"][perm])
    )
    assert not np.array_equal(s["shape"], v["full"])


def test_sensitivity():
    rng = np.random.default_rng(0)
    f = rng.normal(size=(50, 8))
    swapped = {"same": f.copy(), "whole": rng.normal(size=(50, 8)), "half": f + 0.3}
    sens = cs.sensitivity(f, swapped)
    assert sens["same"] == pytest.approx(0.0, abs=1e-9)
    assert 0 < sens["half"] < 1 and set(sens) == {"same", "half"}


def test_bins():
    np.testing.assert_array_equal(
        cs.hue_bins(np.array([0.0, 0.05, 0.5, 0.999, 1.0])), [0, 0, 6, 11, 0]
    )
    np.testing.assert_array_equal(
        cs.place_bins(np.array([0, 0, 96, 50]), np.array([0, 96, 96, 10]), 97), [0, 3, 15, 8]
    )


def test_rrc_boxes_and_crop_stats():
    rng = np.random.default_rng(0)
    boxes = cs.rrc_boxes(rng, 2000, 32, (0.2, 1.0))
    top, left, h, w = boxes.T
    assert np.all((top >= 0) & (left >= 0) & (top + h <= 32) & (left + w <= 32))
    area = h * w / 1024
    assert area.min() > 0.15 and area.max() <= 1.0 and 0.5 < area.mean() < 0.7
    full = cs.rrc_boxes(rng, 100, 32, (1.0, 1.0), (1.0, 1.0))
    assert np.all(full == (0, 0, 32, 32))
    mask = cs.box_mask(np.array([[2, 3, 4, 5]]), 10)
    assert mask.sum() == 20 and mask[0, 2, 3] and not mask[0, 6, 3] and not mask[0, 2, 8]
    alpha = np.ones((200, 32, 32), np.float32)
    whole = cs.crop_stats(alpha, rng, (1.0, 1.0))
    assert whole["item_in_view"] == pytest.approx(1.0) and whole["common_empty"] == 0.0
    part = cs.crop_stats(alpha, rng, (0.2, 0.3))
    assert part["item_in_view"] < 0.35 and part["item_in_common"] < part["item_in_view"]


def test_recipe_override_applies():
    c = configs.load("configs/mocov2_color_fashion_mnist.py")
    configs.apply_override(c, cs.recipe_override((0.5, 1.0), hue=0.5, jitter_p=1.0))
    ops = {op["op"]: op for op in c.data.recipes.mocov2}
    assert tuple(ops["random_resized_crop"]["scale"]) == (0.5, 1.0)
    assert ops["color_jitter"]["hue"] == 0.5 and ops["color_jitter"]["p"] == 1.0
    assert ops["grayscale"]["p"] == 0.2 and len(c.data.recipes.mocov2) == 4


def test_diagnose_needs_a_run_or_a_cell(capsys):
    with pytest.raises(SystemExit):
        cs.main(["diagnose"])
    assert "diagnose needs --run or --cell" in capsys.readouterr().err
