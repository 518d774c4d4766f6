"""InfoMin's pixel-wise invertible flow g (`models/flow.py`)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ssl_jax.models.flow import PixelFlow


def _random_flow(volume_preserving, seed=0, num_blocks=5):
    """A flow with every parameter random (a fresh one is the identity: its last layers are 0)."""
    flow = PixelFlow(num_blocks=num_blocks, hidden=(8, 8), volume_preserving=volume_preserving)
    x = jax.random.uniform(jax.random.PRNGKey(seed), (2, 6, 5, 3))
    params = flow.init(jax.random.PRNGKey(seed + 1), x)
    leaves, tree = jax.tree.flatten(params)
    keys = jax.random.split(jax.random.PRNGKey(seed + 2), len(leaves))
    leaves = [0.5 * jax.random.normal(k, leaf.shape) for k, leaf in zip(keys, leaves, strict=True)]
    return flow, jax.tree.unflatten(tree, leaves), x


def test_fresh_flow_is_the_identity():
    flow = PixelFlow()
    x = jax.random.uniform(jax.random.PRNGKey(0), (2, 4, 4, 3))
    params = flow.init(jax.random.PRNGKey(1), x)
    np.testing.assert_array_equal(flow.apply(params, x), x)


@pytest.mark.parametrize("volume_preserving", [True, False])
def test_inverse_to_1e5(volume_preserving):
    flow, params, x = _random_flow(volume_preserving)
    y = flow.apply(params, x)
    assert float(jnp.max(jnp.abs(y - x))) > 0.1  # it does something
    back = flow.apply(params, y, method=PixelFlow.inverse)
    np.testing.assert_allclose(back, x, atol=1e-5)
    np.testing.assert_allclose(
        flow.apply(params, flow.apply(params, y, method="inverse")), y, atol=1e-5
    )


@pytest.mark.parametrize("volume_preserving", [True, False])
def test_pixel_wise_and_log_det(volume_preserving):
    """Each output pixel depends on its own input pixel only; log|det| of the 3×3 Jacobian per
    pixel is `log_det` (0 for VP)."""
    flow, params, x = _random_flow(volume_preserving, seed=3)
    y = flow.apply(params, x)
    moved = x.at[0, 2, 3].add(0.3)
    changed = jnp.any(flow.apply(params, moved) != y, axis=-1)
    assert changed.sum() == 1 and bool(changed[0, 2, 3])
    pixel = x[1, 4, 1]
    jac = jax.jacfwd(lambda p: flow.apply(params, p[None, None, None])[0, 0, 0])(pixel)
    expected = np.log(abs(np.linalg.det(np.asarray(jac, np.float64))))
    got = float(flow.apply(params, x, method=PixelFlow.log_det)[1, 4, 1])
    np.testing.assert_allclose(got, expected, atol=1e-4)
    if volume_preserving:
        np.testing.assert_allclose(expected, 0.0, atol=1e-4)


def test_blocks_cycle_the_coupled_channel_and_split():
    flow, params, x = _random_flow(True, num_blocks=3)
    firsts = [b.first for b in flow.bind(params).blocks]
    assert firsts == [0, 1, 2]
    v1, v2 = PixelFlow.split(flow.apply(params, x))
    assert v1.shape[-1] == 1 and v2.shape[-1] == 2
    with pytest.raises(ValueError, match="3 channels"):
        flow.apply(params, x[..., :2])
