"""CMC: the step against a float64 numpy reference of the official order of operations
(HobbitLong/CMC `train_CMC.py`, `NCEAverage`, `NCECriterion`; methods.md §4b):

```
x = Lab(crop);  f1 = normalize(head1(enc1(x[..., :1])));  f2 = normalize(head2(enc2(x[..., 1:])))
idx = [own index, K uniform draws]
out_l = bank2[idx]·f1/τ;  out_ab = bank1[idx]·f2/τ
Z_v = mean(exp(out_v))·N at the first step, kept after;  P = exp(out)/Z
L_v = −[Σ_b log(P_b0/(P_b0 + K/N + eps)) + Σ_b Σ_j log((K/N)/(P_bj + K/N + eps))]/B
loss = L_l + L_ab;  bank_v[idx0] = normalize(0.5·bank_v[idx0] + 0.5·f_v)
```
A tiny two-encoder model (ResNet-18 at width 1/16 each) on 16-px synthetic colour views, 3 steps on 1
and on 8 devices; the resume test restores a checkpoint of step 2 and repeats step 3.
"""

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from ssl_jax import checkpoint, sharding, train
from ssl_jax.data import color
from ssl_jax.methods import METHODS, cmc, common
from ssl_jax.models import TwoEncoderModel, head_config
from ssl_jax.state import state_shardings
from tests.helpers import TINY_RECIPE, synthetic_batch, tiny_config

N, B, K, D = 64, 16, 24, 16
TAU, MOMENTUM = 0.07, 0.5
STEPS = 3


def cmc_config(**method_config):
    c = tiny_config("ir")
    c.method = "cmc"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=TAU,
            num_negatives=K,
            bank_size=N,
            bank_momentum=MOMENTUM,
            loss="nce",
            query_bn_group_size=0,
        )
    )
    c.method_config.update(method_config)
    c.data.channels = 3
    c.data.mean, c.data.std = (0.5,) * 3, (0.25,) * 3  # unused: the colour space normalises
    c.data.recipes = ml_collections.ConfigDict(
        {"tiny": (*TINY_RECIPE, {"op": "color_space", "space": "lab"})}
    )
    c.model.projector = head_config((), D, use_bn=False)  # CMC's linear head
    c.optim.base_lr = 0.01
    return c


def _place(host_state, exp):
    return jax.device_put(
        host_state, state_shardings(host_state, exp.mesh, exp.method.buffer_specs(exp.ctx))
    )


@pytest.fixture(scope="module")
def runs():
    config = cmc_config()
    exp1 = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    init = jax.device_get(train.init_or_restore(exp1, None))
    out = {"config": config, "init": init, "exp": exp1}
    for n in (1, 8):
        exp = (
            exp1
            if n == 1
            else train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()))
        )
        state = _place(init, exp)
        step = train.jit_train_step(exp, state)
        states, metrics = [init], []
        for i in range(STEPS):
            state, m = step(state, sharding.host_to_global(synthetic_batch(config, i), exp.mesh))
            metrics.append(jax.device_get(m))
            states.append(jax.device_get(state))
        out[n] = {"states": states, "metrics": metrics, "step": step}
    return out


def np_normalize(x):
    x = np.asarray(x, np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def np_nce_criterion(p, n_data, eps=1e-7):
    """`NCECriterion.forward` on `P = exp(out)/Z`."""
    m = p.shape[1] - 1
    pn = 1.0 / n_data
    log_d1 = np.log(p[:, 0] / (p[:, 0] + m * pn + eps))
    log_d0 = np.log(m * pn / (p[:, 1:] + m * pn + eps))
    return -(log_d1.sum() + log_d0.sum()) / p.shape[0]


def np_ce0(logits):
    mx = logits.max(axis=1, keepdims=True)
    lse = mx[:, 0] + np.log(np.exp(logits - mx).sum(axis=1))
    return float(np.mean(lse - logits[:, 0]))


def test_registered_model_and_initial_buffers(runs):
    """METHODS entry; the two-encoder model (features = both encoders); NCEAverage's init."""
    assert METHODS["cmc"] is cmc and not cmc.USES_TARGET
    model = runs["exp"].ctx.model
    assert isinstance(model, TwoEncoderModel) and model.ENCODERS == ("encoder1", "encoder2")
    assert model.encoder1.width == model.encoder2.width == 0.125 / 2
    params = runs["init"].params
    assert params["encoder1"]["conv1"]["kernel"].shape[2] == 1  # L
    assert params["encoder2"]["conv1"]["kernel"].shape[2] == 2  # ab
    assert model.feature_dim == 2 * model.encoder1.feature_dim
    buffers = runs["init"].buffers
    stdv = 1.0 / np.sqrt(D / 3)
    for name in ("bank1", "bank2"):
        bank = np.asarray(buffers[name])
        assert bank.shape == (N, D) and np.abs(bank).max() <= stdv
        assert np.abs(bank).max() > 0.9 * stdv  # uniform over the range, not normalised
    assert not np.allclose(buffers["bank1"], buffers["bank2"])
    np.testing.assert_array_equal(buffers["z"], [-1.0, -1.0])


def _inputs(state, config, step):
    assert int(state.step) == step
    exp = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    batch = jax.tree.map(jnp.asarray, synthetic_batch(config, step))
    inp = jax.jit(lambda s, b: train.step_input(exp, s, b))(state, batch)
    return exp, inp


def _reference(exp, state, inp):
    """(f1, f2, out_l, out_ab) in float64 from the model's projections and the state's banks."""
    fwd = jax.jit(lambda p, s, x: common.forward(exp.ctx, p, s, x)[0])
    out = fwd(state.params, state.batch_stats, inp.views[0])
    f1, f2 = np_normalize(out["projection1"]), np_normalize(out["projection2"])
    cols = np.asarray(cmc.draw_columns(inp.rng, inp.batch["index"], K, N))
    assert np.array_equal(cols[:, 0], np.asarray(inp.batch["index"]))
    bank1 = np.asarray(state.buffers["bank1"], np.float64)
    bank2 = np.asarray(state.buffers["bank2"], np.float64)
    out_l = np.einsum("bkd,bd->bk", bank2[cols], f1) / TAU
    out_ab = np.einsum("bkd,bd->bk", bank1[cols], f2) / TAU
    return f1, f2, out_l, out_ab


@pytest.mark.parametrize("step", [0, 1])
def test_step_loss_is_the_official_formula(runs, step):
    """Step 0 sets Z from its own scores, step 1 uses the stored Z: the loss (and its two parts)
    equals NCECriterion(exp(out)/Z) summed over the two directions."""
    config, state = runs["config"], runs[1]["states"][step]
    exp, inp = _inputs(state, config, step)
    loss, out = jax.jit(lambda p, s, i: cmc.loss_fn(exp.ctx, p, s, i))(
        state.params, state.batch_stats, inp
    )
    _, _, out_l, out_ab = _reference(exp, state, inp)
    if step == 0:
        z = [np.exp(out_l).mean() * N, np.exp(out_ab).mean() * N]
    else:
        z = np.asarray(state.buffers["z"], np.float64)
    loss_l = np_nce_criterion(np.exp(out_l) / z[0], N)
    loss_ab = np_nce_criterion(np.exp(out_ab) / z[1], N)
    np.testing.assert_allclose(np.asarray(out.updates["z"]), z, rtol=1e-5)
    np.testing.assert_allclose(out.metrics["loss1"], loss_l, rtol=1e-4)
    np.testing.assert_allclose(out.metrics["loss2"], loss_ab, rtol=1e-4)
    np.testing.assert_allclose(float(loss), loss_l + loss_ab, rtol=1e-4)
    np.testing.assert_allclose(runs[1]["metrics"][step]["train/loss"], float(loss), rtol=1e-5)


def test_softmax_loss(runs):
    """`loss='softmax'` (the code's --softmax, NCESoftmaxLoss): CE(out, 0) per direction."""
    config = cmc_config(loss="softmax")
    state = runs["init"]
    exp, inp = _inputs(state, config, 0)
    loss, out = jax.jit(lambda p, s, i: cmc.loss_fn(exp.ctx, p, s, i))(
        state.params, state.batch_stats, inp
    )
    _, _, out_l, out_ab = _reference(exp, state, inp)
    np.testing.assert_allclose(float(loss), np_ce0(out_l) + np_ce0(out_ab), rtol=1e-4)
    np.testing.assert_array_equal(np.asarray(out.updates["z"]), [-1.0, -1.0])  # Z unused


def test_bank_update_and_z_kept(runs):
    """After step 0: bank_v[idx] = normalize(0.5·bank_v[idx] + 0.5·f_v), other rows untouched; Z is
    set at step 0 and never changes after."""
    config, states = runs["config"], runs[1]["states"]
    s0, s1 = states[0], states[1]
    exp, inp = _inputs(s0, config, 0)
    f1, f2, _, _ = _reference(exp, s0, inp)
    index = np.asarray(inp.batch["index"])
    untouched = np.setdiff1d(np.arange(N), index)
    for name, f in (("bank1", f1), ("bank2", f2)):
        old = np.asarray(s0.buffers[name], np.float64)[index]
        expected = np_normalize(MOMENTUM * old + (1 - MOMENTUM) * f)
        np.testing.assert_allclose(np.asarray(s1.buffers[name])[index], expected, atol=1e-5)
        np.testing.assert_array_equal(
            np.asarray(s1.buffers[name])[untouched], np.asarray(s0.buffers[name])[untouched]
        )
    z = np.asarray(s1.buffers["z"])
    assert np.all(z > 0)
    for s in states[2:]:
        np.testing.assert_array_equal(s.buffers["z"], z)


def test_one_vs_eight_devices(runs):
    m1, m8 = runs[1]["metrics"], runs[8]["metrics"]
    np.testing.assert_allclose(
        [m["train/loss"] for m in m1], [m["train/loss"] for m in m8], rtol=2e-4, atol=1e-5
    )
    for s1, s8 in zip(runs[1]["states"], runs[8]["states"], strict=True):
        np.testing.assert_allclose(np.asarray(s1.buffers["z"]), s8.buffers["z"], rtol=1e-5)
        for name in ("bank1", "bank2"):
            np.testing.assert_allclose(
                np.asarray(s1.buffers[name]), np.asarray(s8.buffers[name]), atol=2e-5
            )


def test_save_restore_next_step_is_identical(runs, tmp_path):
    """The state after step 2 saved and restored (banks and Z included): step 3 gives the same
    state and loss as the uninterrupted run."""
    exp, step = runs["exp"], runs[1]["step"]
    config = runs["config"]
    ckpt = checkpoint.Checkpointer(str(tmp_path))
    ckpt.save(_place(runs[1]["states"][2], exp), force=True)
    ckpt.wait()
    restored = train.init_or_restore(exp, ckpt)
    np.testing.assert_array_equal(restored.buffers["z"], runs[1]["states"][2].buffers["z"])
    state, m = step(restored, sharding.host_to_global(synthetic_batch(config, 2), exp.mesh))
    assert float(m["train/loss"]) == float(runs[1]["metrics"][2]["train/loss"])
    for a, b in zip(
        jax.tree.leaves(jax.device_get(state)), jax.tree.leaves(runs[1]["states"][3]), strict=True
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_views_must_be_in_a_colour_space():
    from ssl_jax.configs import ConfigError

    config = cmc_config()
    config.data.recipes = ml_collections.ConfigDict({"tiny": TINY_RECIPE})
    with pytest.raises(ConfigError, match="color_space"):
        train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))


@pytest.mark.slow
def test_color_fashion_mnist_runlocal_end_to_end(tmp_path):
    """`cmc_color_fashion_mnist:runlocal` through `train_and_evaluate` with the kNN monitor at the
    end; then the encoder reads Lab at evaluation (`Encoder.normalize`), its features are both
    encoders', and the export writes one torchvision file per encoder."""
    from ssl_jax import configs
    from ssl_jax.evaluate.encoder import load_encoder
    from ssl_jax.writers import read_metrics

    config = configs.load("configs/cmc_color_fashion_mnist.py:runlocal")
    config.total_steps = 2
    config.log_every_steps = 1
    config.evals = ml_collections.ConfigDict(
        {"knn": dict(type="knn", every_steps=0, num_train=64, num_test=32, batch_size=32, k=5)}
    )
    workdir = str(tmp_path / "run")
    train.train_and_evaluate(config, workdir)
    rows = read_metrics(workdir)
    losses = [r for r in rows if "train/loss" in r]
    assert [r["step"] for r in losses] == [1, 2]
    assert all(np.isfinite(r["train/loss"]) and r["train/z1"] > 0 for r in losses)
    assert any("eval/knn_top1" in r for r in rows)

    enc = load_encoder(workdir)
    images = np.random.default_rng(0).integers(0, 256, (4, 32, 32, 3), dtype=np.uint8)
    np.testing.assert_allclose(
        np.asarray(enc.normalize(images)),
        np.asarray(color.convert(jnp.asarray(images, jnp.float32) / 255.0, "lab")),
        atol=1e-5,
    )
    assert enc.feature_dim == 2 * 32  # two ResNet-18s at width 1/16: 32-d each
    assert sorted(enc.encoder_variables()) == ["encoder1", "encoder2"]
    pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    from ssl_jax import export

    paths = export.export(workdir, "torchvision", str(tmp_path / "cmc.pth"))
    assert paths == [str(tmp_path / "cmc.encoder1.pth"), str(tmp_path / "cmc.encoder2.pth")]
