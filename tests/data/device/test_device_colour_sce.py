"""Host (tf, `host/colour.py`) and device (jnp, `device/colour.py`) draw the same distributions for
what SCE's recipes add to the colour-jitter checks of `test_device_colour.py`: the blur σ, the
solarize and grayscale frequencies, and whole SCE colour pipelines (strong-β, CIFAR strong)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from ssl_jax.data import recipe_ops, recipes
from ssl_jax.data.device import recipe as device_recipe

N = 2048
ZERO, ONE = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)  # mean / std: `apply_recipe` returns [0, 1] pixels


def _host(images_u8, recipe, seed=7):
    """`augment.apply_ops` on the batch, every example with its own uniforms; float32 [0, 1]."""
    tf = pytest.importorskip("tensorflow")
    augment = pytest.importorskip("ssl_jax.data.host.augment")
    tensors = pytest.importorskip("ssl_jax.data.host.tensors")
    u = tf.random.stateless_uniform([len(images_u8), recipe_ops.num_draws(recipe)], [seed, 11])
    out = augment.apply_ops(tf.constant(images_u8), recipe, u)
    return tensors.to_float(out).numpy()


def _device(images_u8, recipe, seed=5):
    fn = jax.jit(lambda x, rng: device_recipe.apply_recipe(x, recipe, rng, ZERO, ONE))
    return np.asarray(fn(jnp.asarray(images_u8), jax.random.key(seed)))


def _batch(image_u8):
    return np.broadcast_to(image_u8, (N, *image_u8.shape)).copy()


def _same_frequency(host_hits, device_hits, p):
    """Two-proportion z-test host vs device, and each against p (4 standard errors)."""
    h, d = np.mean(host_hits), np.mean(device_hits)
    se = np.sqrt(p * (1 - p) / N)
    assert abs(h - d) < 4 * np.sqrt(2) * se, (h, d)
    assert abs(h - p) < 4 * se and abs(d - p) < 4 * se, (h, d, p)


def _colour_image(size=32, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(30, 230, (size, size, 3), dtype=np.uint8)


@pytest.mark.slow  # imports TensorFlow
def test_blur_sigma_distribution():
    """σ ~ U[0.1, 2] with the 23-tap kernel of the SCE ImageNet recipes: blurring an impulse leaves
    `k(0)²` at its centre, a decreasing function of σ; σ recovered from it has the same law on
    both paths (two-sample KS) and is uniform on [0.1, 2] (one-sample KS); p 0.5 applies half."""
    size, kernel = 33, 23
    impulse = np.zeros((size, size, 3), np.uint8)
    impulse[size // 2, size // 2] = 255
    recipe = ({"op": "gaussian_blur", "p": 1.0, "sigma": (0.1, 2.0), "kernel_size": kernel},)
    grid = np.linspace(0.05, 2.05, 4001)
    taps = np.arange(kernel) - kernel // 2
    weights = np.exp(-0.5 * (taps[None, :] / grid[:, None]) ** 2)  # torchvision's 1-D kernel
    centre_of = (weights[:, kernel // 2] / weights.sum(axis=1)) ** 2

    def sigmas(images):
        centre = images[:, size // 2, size // 2, 0]
        return np.interp(-centre, -centre_of, grid)  # centre value decreases with σ

    host, device = sigmas(_host(_batch(impulse), recipe)), sigmas(_device(_batch(impulse), recipe))
    assert stats.ks_2samp(host, device).pvalue > 1e-3
    for s in (host, device):
        assert stats.kstest(s, stats.uniform(0.1, 1.9).cdf).pvalue > 1e-3
    half = ({**recipe[0], "p": 0.5},)
    blurred = lambda x: x[:, size // 2, size // 2, 0] < 0.999  # noqa: E731
    _same_frequency(
        blurred(_host(_batch(impulse), half)), blurred(_device(_batch(impulse), half)), 0.5
    )


@pytest.mark.slow  # imports TensorFlow
@pytest.mark.parametrize("p", [0.2, 0.1])
def test_solarize_and_grayscale_frequencies(p):
    """strong-β/γ solarize p 0.2 and the recipes' grayscale p 0.2: same frequency on both paths."""
    bright = np.full((8, 8, 3), 191, np.uint8)  # 0.75 >= 0.5: solarized to 0.25
    solar = ({"op": "solarize", "p": p, "threshold": 0.5},)
    hit = lambda x: x[:, 0, 0, 0] < 0.5  # noqa: E731
    _same_frequency(hit(_host(_batch(bright), solar)), hit(_device(_batch(bright), solar)), p)
    colour = _colour_image(8)
    gray = ({"op": "grayscale", "p": p},)
    grey = lambda x: np.all(np.ptp(x, axis=-1) < 1e-6, axis=(1, 2))  # noqa: E731
    _same_frequency(grey(_host(_batch(colour), gray)), grey(_device(_batch(colour), gray)), p)


def _statistics(x):
    """Per image: mean intensity, colourfulness (mean |x − luma|), high-frequency energy (mean
    |horizontal difference|): brightness/solarize, saturation/grayscale and blur move them.
    Rounded to 1e-6: the two paths' float rounding differs (e.g. a grayscale image's colourfulness
    is 2.02e-17 on one and 2.11e-17 on the other), which KS would read as different atoms."""
    luma = x @ np.asarray(recipe_ops.LUMA)
    values = {
        "mean": x.mean(axis=(1, 2, 3)),
        "colourfulness": np.abs(x - luma[..., None]).mean(axis=(1, 2, 3)),
        "high_frequency": np.abs(np.diff(x, axis=2)).mean(axis=(1, 2, 3)),
    }
    return {name: np.round(v, 6) for name, v in values.items()}


COLOUR_ONLY = {
    name: tuple(op for op in recipe if op["op"] not in recipe_ops.HOST_OPS)
    for name, recipe in {
        # every colour op of Tab. 2 (jitter, grayscale, blur, solarize); α and γ differ in p only
        "strong_beta": recipes.strong_beta(32, kernel_size=9),
        "cifar_strong": recipes.cifar_strong(32),  # saturation 0.4, 13-tap blur p 0.5
    }.items()
}


@pytest.mark.slow  # imports TensorFlow
@pytest.mark.parametrize("name", sorted(COLOUR_ONLY))
def test_sce_recipes_same_distributions(name):
    """The colour part of each SCE recipe (what `data.device_ops` moves to the device) on one
    textured image: the per-image statistics have the same law on both paths (two-sample KS)."""
    recipe = COLOUR_ONLY[name]
    image = _colour_image(32, seed=1)
    host, device = (
        _statistics(_host(_batch(image), recipe)),
        _statistics(_device(_batch(image), recipe)),
    )
    for stat in host:
        result = stats.ks_2samp(host[stat], device[stat])
        assert result.pvalue > 1e-3, (name, stat, result)
