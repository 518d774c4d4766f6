"""The jigsaw op (PyContrast's `JigsawCrop` as a mosaic) against a numpy reference of its loop."""

import numpy as np
import pytest
import tensorflow as tf

from ssl_jax.data import recipe_ops, recipes
from ssl_jax.data.host import augment


def _reference(image, offsets_y, offsets_x, grid, patch):
    """PyContrast `JigsawCrop.__call__` with given offsets (its `r_x` indexes rows, `r_y`
    columns), the crops then laid out as the op's mosaic: crop i at block (i // grid, i % grid)."""
    cell = image.shape[0] // grid
    mosaic = np.zeros((grid * patch, grid * patch, image.shape[2]), image.dtype)
    for i in range(grid * grid):
        top = (i // grid) * cell + offsets_y[i]
        left = (i % grid) * cell + offsets_x[i]
        crop = image[top : top + patch, left : left + patch]
        r, c = divmod(i, grid)
        mosaic[r * patch : (r + 1) * patch, c * patch : (c + 1) * patch] = crop
    return mosaic


@pytest.mark.parametrize("size,grid,patch", [(255, 3, 64), (36, 3, 9), (20, 2, 10)])
def test_jigsaw_matches_the_reference_crop_loop(size, grid, patch):
    rng = np.random.default_rng(size)
    images = rng.integers(0, 256, (4, size, size, 3), dtype=np.uint8)
    cells = grid * grid
    u = rng.random((4, 2 * cells)).astype(np.float32)
    u[0] = 0.0  # smallest offsets
    u[1] = np.nextafter(np.float32(1), np.float32(0))  # largest: cell - patch
    out = augment.BATCH_OPS["jigsaw"](tf.constant(images), tf.constant(u), grid=grid, patch=patch)
    side = size // grid - patch
    for n in range(4):
        off = np.minimum((u[n] * (side + 1)).astype(np.int64), side)
        expected = _reference(images[n], off[:cells], off[cells:], grid, patch)
        np.testing.assert_array_equal(out[n].numpy(), expected)
    assert out.dtype == tf.uint8  # a pixel op: runs on uint8 after the quantisation


def test_jigsaw_offsets_are_uniform_over_each_cell():
    """randint(0, cell − patch + 1) per axis and cell: every offset equally likely."""
    size, grid, patch = 20, 2, 6  # cells of 10: offsets 0..4
    image = np.tile(np.arange(size, dtype=np.uint8)[:, None, None], (1, size, 1))  # value = row
    images = tf.constant(np.repeat(image[None], 2000, axis=0))
    u = tf.random.stateless_uniform([2000, 2 * grid * grid], [5, 6])
    out = augment.BATCH_OPS["jigsaw"](images, u, grid=grid, patch=patch).numpy()
    top_of_first_cell = out[:, 0, 0, 0]
    counts = np.bincount(top_of_first_cell, minlength=5)
    assert counts.shape == (5,) and counts.min() > 330, counts  # 400 expected each


def test_jigsaw_recipe_runs_and_is_seeded():
    image = tf.constant(np.random.default_rng(0).integers(0, 256, (300, 280, 3), dtype=np.uint8))
    recipe = recipes.jigsaw()
    recipe_ops.validate_recipe("jigsaw", recipe, 3)
    a = augment.apply_recipe(image, recipe, tf.constant([1, 2]))
    b = augment.apply_recipe(image, recipe, tf.constant([1, 2]))
    c = augment.apply_recipe(image, recipe, tf.constant([1, 3]))
    assert a.shape == (192, 192, 3) and a.dtype == tf.uint8
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert recipe_ops.num_draws(recipe) == 2 * recipe_ops.RRC_ATTEMPTS + 2 + 1 + 18


def test_jigsaw_rejects_bad_sizes():
    with pytest.raises(ValueError, match="grid=0 must be a positive int"):
        recipe_ops.validate_recipe("j", ({"op": "jigsaw", "grid": 0, "patch": 4},), 3)
    with pytest.raises(ValueError, match="patch=12 is larger than the 10×10 cells"):
        augment.BATCH_OPS["jigsaw"](
            tf.zeros([1, 30, 30, 3], tf.uint8), tf.zeros([1, 18]), grid=3, patch=12
        )
