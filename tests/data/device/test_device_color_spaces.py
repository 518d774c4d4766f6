"""Colour spaces (`data/color.py`): the tf (`host/color_spaces.py`) and jnp
(`device/color_spaces.py`) conversions against scikit-image and each other on random and real
images, the official normalisation, the channel split, and the `color_space` op on host and
device."""

import jax
import ml_collections
import numpy as np
import pytest
import tensorflow as tf

from ssl_jax.config_checks import ConfigError
from ssl_jax.data import color, pipeline, recipe_ops, recipes
from ssl_jax.data.device import recipe as device_recipe
from ssl_jax.data.device.color_spaces import convert
from ssl_jax.data.host import augment
from ssl_jax.data.host.color_spaces import convert_tf
from tests.data.data_helpers import split_channels

skcolor = pytest.importorskip("skimage.color")
skdata = pytest.importorskip("skimage.data")

REFERENCES = {"lab": skcolor.rgb2lab, "ycbcr": skcolor.rgb2ycbcr, "ydbdr": skcolor.rgb2ydbdr}
# float32 error at the spaces' scales (L up to 100, Y up to 235, Db/Dr up to 1.3)
ATOL = {"lab": 2e-3, "ycbcr": 2e-3, "ydbdr": 1e-5}
# The official normalisation, written out from the code: CMC train_CMC.py L131–137 (Lab ranges;
# --view YCbCr), PyContrast datasets/util.py (YDbDr).
OFFICIAL = {
    "lab": ([50.0, 6.025, -6.6895], [50.0, 92.208, 101.1675]),
    "ycbcr": ([116.151, 121.080, 132.342], [109.500, 111.855, 111.964]),
    "ydbdr": ([0.457, -0.082, -0.052], [0.500, 1.331, 1.333]),
}


def _images() -> list[np.ndarray]:
    """uint8 RGB: random pixels with the gamma / Lab thresholds' neighbours, pure colours, and
    real photographs shipped inside scikit-image (crops, to stay fast)."""
    rng = np.random.default_rng(0)
    random = rng.integers(0, 256, (2, 16, 16, 3), dtype=np.uint8)
    corners = np.array(
        [[[a, b, c] for a in (0, 1, 10, 11, 255) for b in (0, 2, 128, 255) for c in (0, 9, 255)]],
        np.uint8,
    )
    photos = [skdata.astronaut()[100:164, 150:214], skdata.chelsea()[50:114, 100:164]]
    return [*random, corners, *photos]


@pytest.mark.parametrize("space", list(color.SPACES))
def test_conversions_match_scikit_image_on_tf_and_jnp(space):
    for image in _images():
        ref = REFERENCES[space](image)  # skimage takes uint8 as x / 255
        x = image.astype(np.float32) / 255.0
        out_jnp = np.asarray(convert(x, space, normalize=False))
        out_tf = convert_tf(x, space, normalize=False).numpy()
        np.testing.assert_allclose(out_jnp, ref, atol=ATOL[space], rtol=0)
        np.testing.assert_allclose(out_tf, ref, atol=ATOL[space], rtol=0)
        np.testing.assert_allclose(out_tf, out_jnp, atol=ATOL[space], rtol=0)


@pytest.mark.parametrize("space", list(color.SPACES))
def test_normalisation_is_the_official_one(space):
    mean, std = OFFICIAL[space]
    np.testing.assert_allclose(color.SPACES[space].mean, mean, atol=1e-9)
    np.testing.assert_allclose(color.SPACES[space].std, std, atol=1e-9)
    image = _images()[0]
    # torchvision ToTensor keeps a float array as is, then Normalize(mean, std)
    ref = (REFERENCES[space](image) - np.array(mean)) / np.array(std)
    x = image.astype(np.float32) / 255.0
    np.testing.assert_allclose(np.asarray(convert(x, space)), ref, atol=5e-5)
    np.testing.assert_allclose(convert_tf(x, space).numpy(), ref, atol=5e-5)


def test_split_channels_and_unknown_space():
    x = np.zeros((2, 4, 4, 3), np.float32)
    for space in color.SPACES:
        first, rest = split_channels(x, space)
        assert first.shape == (2, 4, 4, 1) and rest.shape == (2, 4, 4, 2)
        first, rest = split_channels(tf.constant(x), space)
        assert first.shape == (2, 4, 4, 1) and rest.shape == (2, 4, 4, 2)
    with pytest.raises(ValueError, match="'hsv' is not one of"):
        convert(x, "hsv")


def test_color_space_op_host_and_device_agree():
    image = _images()[3]  # 64 × 64 astronaut crop
    recipe = recipes.cmc(32, "lab")
    recipe_ops.validate_recipe("cmc", recipe, 3)
    x = image.astype(np.float32) / 255.0
    host = augment.color_space(tf.constant(x), tf.constant([0, 1]), space="lab").numpy()
    np.testing.assert_allclose(host, np.asarray(convert(x, "lab")), atol=1e-4)
    # the pipeline strips it from the host recipe; the device finishes the uint8 view
    ops = [dict(op) for op in recipe]
    batch = image[None]
    dev = device_recipe.to_model_input(batch, ops, (0.5,) * 3, (0.5,) * 3)
    np.testing.assert_allclose(np.asarray(dev)[0], host, atol=1e-4)
    dev = device_recipe.apply_recipe(batch, ops, jax.random.PRNGKey(0), (0.5,) * 3, (0.5,) * 3)
    np.testing.assert_allclose(np.asarray(dev)[0], host, atol=1e-4)
    plain = device_recipe.to_model_input(batch, ops[:-1], (0.5,) * 3, (0.25,) * 3)
    np.testing.assert_allclose(np.asarray(plain), (batch / 255.0 - 0.5) / 0.25, atol=1e-5)
    with pytest.raises(ValueError, match="float views"):
        augment.apply_recipe(tf.constant(image), recipe, tf.constant([0, 1]))


def test_pipeline_keeps_color_space_off_the_host():
    data = ml_collections.ConfigDict(
        dict(
            channels=3,
            views=("a", "b"),
            recipes={"a": recipes.cmc(16), "b": recipes.cmc_pycontrast(16)},
            device_ops=False,
        )
    )
    host = pipeline._recipes(ml_collections.ConfigDict(dict(data=data)))
    assert [op["op"] for op in host[0][1]] == ["random_resized_crop", "horizontal_flip"]
    assert host[1][1][-1]["op"] == "color_jitter"


@pytest.mark.parametrize(
    "recipe, channels, match",
    [
        (({"op": "color_space", "space": "hsv"},), 3, "allowed: \\('lab', 'ycbcr', 'ydbdr'\\)"),
        (({"op": "color_space", "space": "lab"},), 1, "channels == 1"),
        (({"op": "color_space", "space": "lab"}, {"op": "horizontal_flip", "p": 0.5}), 3, "last"),
        (({"op": "color_space"},), 3, "missing \\['space'\\]"),
    ],
)
def test_recipe_checker_rejects_bad_color_space(recipe, channels, match):
    with pytest.raises(ValueError, match=match) as info:
        recipe_ops.validate_recipe("v", recipe, channels)
    if "missing" not in match:
        assert isinstance(info.value, ConfigError)
