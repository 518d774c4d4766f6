"""InfoMin's learned views (`ssl_jax/view_learning.py`): the adversarial step's directions, the
flow file and its device op, and the pipeline learn g → freeze → CMC on g's views → probe."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ssl_jax import configs, view_learning
from ssl_jax.config_checks import ConfigError
from ssl_jax.data import recipe_ops
from ssl_jax.data.device import flow_views
from ssl_jax.data.device import recipe as device_recipe
from ssl_jax.models.flow import PixelFlow
from tests.data.data_helpers import make_fashion_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _nets_and_params(seed=0):
    nets = view_learning.Nets(PixelFlow(num_blocks=3, hidden=(8,)), embed_dim=16)
    x = jax.random.normal(jax.random.PRNGKey(seed), (16, 8, 8, 3))
    params = nets.init(jax.random.PRNGKey(seed + 1), x)
    # a fresh g is the identity with zero last layers: give it a start that has gradients
    params = jax.tree_util.tree_map_with_path(
        lambda path, v: (
            0.3 * jax.random.normal(jax.random.PRNGKey(7), v.shape)
            if "flow" in str(path[:2]) and "kernel" in str(path[-1])
            else v
        ),
        params,
    )
    return nets, params, x


def test_critic_raises_and_generator_lowers_the_nce_bound():
    """One unsupervised iteration: the critic's update lowers the InfoNCE loss (raises I_NCE) for
    the old g; g's update raises it for the new critic; each update moves only its own side."""
    nets, params, x = _nets_and_params()
    steps = view_learning.make_step(nets, "unsupervised", 0.1, lr_g=3e-2, lr_critic=3e-2)
    new, _, metrics = steps.step(params, steps.init(params), x, x, jnp.zeros(16, jnp.int32))

    def nce(p_g, p_f):
        mixed = {"params": {**p_f["params"], "flow": p_g["params"]["flow"]}}
        v1, v2 = nets.apply(mixed, x, method=view_learning.Nets.views)
        return float(view_learning.nce_loss(*nets.apply(mixed, v1, v2, method="critic"), 0.1))

    assert nce(params, new) < nce(params, params)  # critic step: I_NCE up
    assert nce(new, new) > nce(params, new)  # generator step: I_NCE down
    np.testing.assert_allclose(float(metrics["i_nce"]), np.log(16) - nce(params, params), rtol=1e-4)
    for side, moved in (("c1", False), ("f1", True), ("flow", True)):
        delta = jax.tree.leaves(
            jax.tree.map(
                lambda a, b: jnp.max(jnp.abs(a - b)), new["params"][side], params["params"][side]
            )
        )
        assert (max(float(d) for d in delta) > 0) == moved, side  # c1: no label term here


def test_supervised_step_trains_classifiers_and_g_only():
    nets, params, x = _nets_and_params(2)
    steps = view_learning.make_step(nets, "supervised", 0.1, lr_g=1e-2, lr_critic=1e-2)
    y = jnp.arange(16) % 10
    new, _, metrics = steps.step(params, steps.init(params), x, x, y)
    assert "i_nce" not in metrics and {"ce", "acc"} <= set(metrics)
    same = jax.tree.map(
        lambda a, b: bool(jnp.all(a == b)), new["params"]["f2"], params["params"]["f2"]
    )
    assert all(jax.tree.leaves(same))
    with pytest.raises(ValueError, match="mode="):
        view_learning.make_step(nets, "self", 0.1, 1e-3, 1e-3)


def test_each_step_leaves_the_other_side_bit_identical():
    """Semi-supervised, after two full iterations (both sides' Adam moments are non-zero): a
    generator step leaves f1, f2 bit-identical and a critic step leaves g, c1, c2 bit-identical
    (one shared Adam state would move them by their momentum)."""
    nets, params, x = _nets_and_params(3)
    steps = view_learning.make_step(nets, "semi", 0.1, lr_g=1e-2, lr_critic=1e-2)
    y = jnp.arange(16) % 10
    opt = steps.init(params)
    for _ in range(2):
        params, opt, _ = steps.step(params, opt, x, x, y)

    def moved(before, after):
        return {
            name: any(
                np.asarray(a).tobytes() != np.asarray(b).tobytes()
                for a, b in zip(jax.tree.leaves(before[name]), jax.tree.leaves(after[name]))
            )
            for name in before
        }

    after_g, opt, _ = steps.generator(params, opt, x, x, y)
    assert moved(params["params"], after_g["params"]) == dict(
        flow=True, c1=True, c2=True, f1=False, f2=False
    )
    after_c, _, _ = steps.critic(after_g, opt, x)
    assert moved(after_g["params"], after_c["params"]) == dict(
        flow=False, c1=False, c2=False, f1=True, f2=True
    )


def test_flow_file_and_device_op(tmp_path):
    flow = PixelFlow(num_blocks=2, hidden=(4,), volume_preserving=False)
    rgb = jax.random.uniform(jax.random.PRNGKey(0), (2, 5, 5, 3))
    params = flow.init(jax.random.PRNGKey(1), rgb)
    params = jax.tree.map(lambda v: v + 0.2, params)
    views = flow_views.FlowViews(
        flow, params, "ydbdr", (0.5,) * 3, (0.25,) * 3, (0.1, 0.2, 0.3), (1.5, 2.0, 2.5)
    )
    path = flow_views.save_flow(str(tmp_path / "flow.npz"), views)
    loaded = flow_views.load_flow(path)
    assert loaded.base == "ydbdr" and not loaded.flow.volume_preserving
    expected = flow_views.apply_flow(views, rgb)
    np.testing.assert_allclose(flow_views.apply_flow(loaded, rgb), expected, atol=1e-6)
    images = jnp.asarray(np.round(np.asarray(rgb) * 255), jnp.uint8)
    op = ({"op": "learned_flow", "path": path},)
    got = device_recipe.to_model_input(images, op, (0.0,) * 3, (1.0,) * 3)
    np.testing.assert_allclose(
        got, flow_views.apply_flow(views, images.astype(jnp.float32) / 255), atol=1e-5
    )
    recipe_ops.validate_recipe("v", op, 3)
    with pytest.raises(ConfigError, match="is not a file"):
        recipe_ops.validate_recipe("v", ({"op": "learned_flow", "path": str(tmp_path / "no")},), 3)
    with pytest.raises(ConfigError, match="last op"):
        recipe_ops.validate_recipe("v", (*op, {"op": "horizontal_flip", "p": 0.5}), 3)


def test_learn_freeze_cmc_probe_end_to_end(tmp_path):
    """`:runlocal` sizes: semi-supervised g on a 256-image color_fashion_mnist, then CMC on g's
    views (the recipe ends with learned_flow), then its probe table."""
    from ssl_jax import train

    fashion = make_fashion_dir(str(tmp_path / "fashion"), num_train=256, num_test=64)
    cache = str(tmp_path / "cache")
    vc = configs.load(os.path.join(ROOT, "configs/views/color_fashion_mnist.py:runlocal"))
    vc.data.data_dir, vc.data.color_fashion_mnist.cache_dir = fashion, cache
    path = view_learning.learn_views(vc, str(tmp_path / "views"))
    assert os.path.isfile(path) and os.path.isfile(str(tmp_path / "views" / "views.png"))
    rows = open(str(tmp_path / "views" / "metrics.jsonl")).read().splitlines()
    assert len(rows) == 2 and all(k in rows[-1] for k in ("i_nce", "ce", "acc"))
    learned = flow_views.load_flow(path)  # trained: no longer the fresh flow (the identity)
    rgb = jax.random.uniform(jax.random.PRNGKey(0), (4, 3, 3, 3))
    moved = learned.flow.apply(learned.params, rgb) - rgb
    assert float(jnp.max(jnp.abs(moved))) > 1e-6

    c = configs.load(os.path.join(ROOT, f"configs/cmc_color_fashion_mnist.py:runlocal,flow={path}"))
    assert c.data.recipes.cmc[-1]["op"] == "learned_flow"
    c.data.data_dir, c.data.color_fashion_mnist.cache_dir = fashion, cache
    c.total_steps = 2
    c.evals.probe_table.update(num_train=256)
    c.evals.knn.update(num_train=256, num_test=64)
    workdir = str(tmp_path / "cmc")
    train.train_and_evaluate(c, workdir)
    table = open(os.path.join(workdir, "probe_table.txt")).read()
    assert "pretrained" in table and "raw pixels" in table
