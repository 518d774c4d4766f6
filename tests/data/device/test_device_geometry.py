"""The device's crop sampler (`device/geometry.rrc_params`, float32) against the host's
(`host/geometry.rrc_params`, float64): the same boxes on the same draws, and the same law from
independent draws."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from ssl_jax.data.device import geometry as device_geometry

SAMPLER_CASES = [
    (32, 32, (0.2, 1.0), (3 / 4, 4 / 3)),
    (28, 28, (0.08, 1.0), (3 / 4, 4 / 3)),
    (96, 64, (0.08, 1.0), (3 / 4, 4 / 3)),
    (20, 90, (0.6, 1.0), (3 / 4, 4 / 3)),  # a wide image: the centre fallback is frequent
]


@pytest.mark.parametrize("height, width, scale, ratio", SAMPLER_CASES)
def test_crop_sampler_is_the_hosts_on_the_same_draws(height, width, scale, ratio):
    """float32 here, float64 on the host: a box differs only where a rounding sits on a tie."""
    tf = pytest.importorskip("tensorflow")
    geometry = pytest.importorskip("ssl_jax.data.host.geometry")
    u = np.random.default_rng(2).uniform(size=(20_000, 22)).astype(np.float32)
    host = np.stack(
        [v.numpy() for v in geometry.rrc_params(tf.constant(u), height, width, scale, ratio)], 1
    )
    device = np.stack(
        [
            np.asarray(v)
            for v in device_geometry.rrc_params(jnp.asarray(u), height, width, scale, ratio)
        ],
        1,
    )
    same = np.all(host == device, axis=1)
    assert same.mean() >= 0.999, same.mean()


@pytest.mark.parametrize("height, width, scale, ratio", SAMPLER_CASES)
def test_crop_sampler_has_the_hosts_law(height, width, scale, ratio):
    """Independent draws (JAX's generator on the device, TF's stateless one on the host, as each
    pipeline draws them): two-sample KS tests of the area fraction, log aspect ratio and the box
    centre, 4,000 boxes each, fixed seeds, p > 1e-3."""
    tf = pytest.importorskip("tensorflow")
    geometry = pytest.importorskip("ssl_jax.data.host.geometry")
    n = 4000
    seeds = tf.random.experimental.stateless_split(tf.constant([3, 5], tf.int64), n)
    u_host = tf.map_fn(
        lambda s: tf.random.stateless_uniform([22], s), seeds, fn_output_signature=tf.float32
    )
    host = np.stack(
        [v.numpy() for v in geometry.rrc_params(u_host, height, width, scale, ratio)], 1
    )
    u_dev = jax.random.uniform(jax.random.key(7), (n, 22))
    device = np.stack(
        [np.asarray(v) for v in device_geometry.rrc_params(u_dev, height, width, scale, ratio)], 1
    )

    def stats(box):
        top, left, h, w = box.T.astype(np.float64)
        return {
            "area": h * w / (height * width),
            "log_ratio": np.log(w / h),
            "centre_y": (top + h / 2) / height,
            "centre_x": (left + w / 2) / width,
        }

    for key, a in stats(host).items():
        b = stats(device)[key]
        p = scipy.stats.ks_2samp(a, b).pvalue
        assert p > 1e-3, (key, p)


def test_the_law_test_can_fail():
    """A sampler with the scale range (0.3, 1) instead of (0.2, 1) is rejected by the same test."""
    tf = pytest.importorskip("tensorflow")
    geometry = pytest.importorskip("ssl_jax.data.host.geometry")
    n = 4000
    seeds = tf.random.experimental.stateless_split(tf.constant([3, 5], tf.int64), n)
    u_host = tf.map_fn(
        lambda s: tf.random.stateless_uniform([22], s), seeds, fn_output_signature=tf.float32
    )
    host = geometry.rrc_params(u_host, 32, 32, (0.2, 1.0), (3 / 4, 4 / 3))
    device = device_geometry.rrc_params(
        jax.random.uniform(jax.random.key(7), (n, 22)), 32, 32, (0.3, 1.0), (3 / 4, 4 / 3)
    )
    area = [np.asarray(b[2] * b[3], np.float64) for b in (host, device)]
    assert scipy.stats.ks_2samp(*[np.asarray(a) for a in area]).pvalue < 1e-3
