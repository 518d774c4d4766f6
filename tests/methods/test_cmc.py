"""CMC: the step against a float64 numpy reference of the official order of operations
(HobbitLong/CMC `train_CMC.py`, `NCEAverage`, `NCECriterion`):

```
x = Lab(crop);  f1 = normalize(head1(enc1(x[..., :1])));  f2 = normalize(head2(enc2(x[..., 1:])))
idx = [own index, K uniform draws]
out_l = bank2[idx]·f1/τ;  out_ab = bank1[idx]·f2/τ
Z_v = mean(exp(out_v))·N at the first step, kept after;  P = exp(out)/Z
L_v = −[Σ_b log(P_b0/(P_b0 + K/N + eps)) + Σ_b Σ_j log((K/N)/(P_bj + K/N + eps))]/B
loss = L_l + L_ab;  bank_v[idx0] = normalize(0.5·bank_v[idx0] + 0.5·f_v)
```
`cmc_color_fashion_mnist:runlocal` (two ResNet-18s at width 1/16, bank of 256, K 64, batch 32) on a
256-image source: its first 3 batches through the train step on 1 device, the same run by
`train_and_evaluate` on 8 devices; the resume test restores the state of step 2 and repeats step 3.
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from ssl_jax import checkpoint, train
from ssl_jax.data.device.color_spaces import convert
from ssl_jax.data.device.eval_input import eval_input, eval_ops
from ssl_jax.methods import METHODS, cmc, common
from ssl_jax.models import TwoEncoderModel, head_config
from ssl_jax.parallel import sharding
from tests.helpers import (
    TINY_RECIPE,
    assert_steps_match,
    fashion_source,
    np_ce0,
    np_normalize,
    one_step_on_all_devices,
    place_state,
    tiny_config,
)

# `cmc_color_fashion_mnist:runlocal`: bank of 256, K 64, batch 32, heads to 32, 32-px views
N, B, K, D = 256, 32, 64, 32
TAU, MOMENTUM = 0.07, 0.5
STEPS = 3


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """The generator's Fashion-MNIST source, a 256 + 64 image folder (generated in a second), and
    the cache folder of the generated colour splits."""
    return fashion_source(tmp_path_factory.mktemp("cmc_data"))


def runlocal_config(source, **method_config):
    """`cmc_color_fashion_mnist:runlocal` on the small source, 3 steps, no evaluator: the runs below
    and the end-to-end run compile the same 8-device step (the persistent compilation cache of
    one pytest run compiles it once)."""
    from ssl_jax import configs

    c = configs.load("configs/cmc_color_fashion_mnist.py:runlocal")
    c.data.data_dir, c.data.color_fashion_mnist.cache_dir = source
    c.total_steps = STEPS
    c.log_every_steps = 1
    c.evals = ml_collections.ConfigDict()
    c.method_config.update(method_config)
    assert (c.method_config.bank_size, c.method_config.num_negatives) == (N, K)
    assert c.global_batch_size == B and c.model.projector.out_dim == D
    return c


def cmc_config(**method_config):
    """The tiny Fashion-MNIST config of the other methods' tests in CMC's shape (no data needed for
    `hparams` / validation tests)."""
    c = tiny_config("ir")
    c.method = "cmc"
    c.method_config = ml_collections.ConfigDict(
        dict(temperature=TAU, num_negatives=K, bank_size=N, bank_momentum=MOMENTUM, loss="nce")
    )
    c.method_config.update(method_config)
    c.data.channels = 3
    c.data.mean, c.data.std = (0.5,) * 3, (0.25,) * 3  # unused: the colour space normalises
    c.data.recipes = ml_collections.ConfigDict(
        {"tiny": (*TINY_RECIPE, {"op": "color_space", "space": "lab"})}
    )
    c.model.projector = head_config((), D, use_bn=False)  # CMC's linear head
    return c


@pytest.fixture(scope="module")
def runs(source, tmp_path_factory):
    """The runlocal config's first 3 pipeline batches through the train step on ONE device, and
    the same run by `train_and_evaluate` on all 8 devices (its metrics and final state)."""
    import itertools

    from ssl_jax.data import pipeline
    from ssl_jax.output.writers import read_metrics

    config = runlocal_config(source)
    exp1 = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))
    init = jax.device_get(train.init_or_restore(exp1, None))
    batches = list(itertools.islice(pipeline.train_iterator(config), STEPS))
    state = place_state(init, exp1)
    step = train.jit_train_step(exp1, state)
    states, metrics = [init], []
    for batch in batches:
        state, m = step(state, sharding.host_to_global(batch, exp1.mesh))
        metrics.append(jax.device_get(m))
        states.append(jax.device_get(state))
    workdir = str(tmp_path_factory.mktemp("cmc_run") / "run")
    final = jax.device_get(train.train_and_evaluate(config, workdir))
    logged = [r for r in read_metrics(workdir) if "train/loss" in r]
    one_step = one_step_on_all_devices(config, states, batches)  # free of the trajectory's kinks
    return {
        "config": config,
        "init": init,
        "exp": exp1,
        "batches": batches,
        1: {"states": states, "metrics": metrics, "step": step},
        8: {"final": final, "metrics": logged, "workdir": workdir, "one_step": one_step},
    }


def np_nce_criterion(p, n_data, eps=1e-7):
    """`NCECriterion.forward` on `P = exp(out)/Z`."""
    m = p.shape[1] - 1
    pn = 1.0 / n_data
    log_d1 = np.log(p[:, 0] / (p[:, 0] + m * pn + eps))
    log_d0 = np.log(m * pn / (p[:, 1:] + m * pn + eps))
    return -(log_d1.sum() + log_d0.sum()) / p.shape[0]


def test_registered_model_and_initial_buffers(runs):
    """METHODS entry; the two-encoder model (features = both encoders); NCEAverage's init."""
    assert METHODS["cmc"] is cmc and not cmc.USES_TARGET
    model = runs["exp"].ctx.model
    assert isinstance(model, TwoEncoderModel) and model.ENCODERS == ("encoder1", "encoder2")
    assert model.encoder1.width == model.encoder2.width == 0.125 / 2  # runlocal's width, halved
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


@pytest.fixture(scope="module")
def reference(runs):
    """`(state, step) -> (f1, f2, out_l, out_ab)` in float64: the step's views, the 1-device
    model's projections and the K+1 columns drawn from the step's loss key, against the state's
    banks (one jitted forward for every test)."""
    exp = runs["exp"]

    @jax.jit
    def forward(state, batch):
        inp = train.step_input(exp, state, batch)
        out = common.forward(exp.ctx, state.params, state.batch_stats, inp.views[0])[0]
        cols = cmc.draw_columns(inp.rng, batch["index"], K, N)
        return out["projection1"], out["projection2"], cols

    def compute(state, step):
        assert int(state.step) == step
        batch = jax.tree.map(jnp.asarray, runs["batches"][step])
        p1, p2, cols = jax.device_get(forward(state, batch))
        f1, f2 = np_normalize(p1), np_normalize(p2)
        assert np.array_equal(cols[:, 0], batch["index"])
        bank1 = np.asarray(state.buffers["bank1"], np.float64)
        bank2 = np.asarray(state.buffers["bank2"], np.float64)
        out_l = np.einsum("bkd,bd->bk", bank2[cols], f1) / TAU  # L against the ab memory
        out_ab = np.einsum("bkd,bd->bk", bank1[cols], f2) / TAU  # ab against the L memory
        return f1, f2, out_l, out_ab

    return compute


@pytest.mark.parametrize("step", [0, 1])
def test_step_loss_is_the_official_formula(runs, reference, step):
    """Step 0 sets Z from its own scores, step 1 uses the stored Z: the logged loss (and its two
    parts, and Z) equals NCECriterion(exp(out)/Z) summed over the two directions."""
    state = runs[1]["states"][step]
    _, _, out_l, out_ab = reference(state, step)
    if step == 0:
        z = [np.exp(out_l).mean() * N, np.exp(out_ab).mean() * N]
    else:
        z = np.asarray(state.buffers["z"], np.float64)
    loss_l = np_nce_criterion(np.exp(out_l) / z[0], N)
    loss_ab = np_nce_criterion(np.exp(out_ab) / z[1], N)
    m = runs[1]["metrics"][step]
    np.testing.assert_allclose([m["train/z1"], m["train/z2"]], z, rtol=1e-5)
    np.testing.assert_allclose([m["train/loss1"], m["train/loss2"]], [loss_l, loss_ab], rtol=1e-4)
    np.testing.assert_allclose(m["train/loss"], loss_l + loss_ab, rtol=1e-4)


class _LinearTwoView(nn.Module):
    """A stand-in for the two encoders: one linear map per channel split (compiles in a second)."""

    @nn.compact
    def __call__(self, x, train, bn_groups=1, use_predictor=True, head_bn_groups=None):
        flat = lambda v: v.reshape(v.shape[0], -1)
        return {
            "projection1": nn.Dense(D, name="l")(flat(x[..., :1])),
            "projection2": nn.Dense(D, name="ab")(flat(x[..., 1:])),
        }


@pytest.mark.parametrize("loss", ["softmax", "nce"])
def test_loss_fn_on_a_linear_model(loss):
    """`cmc.loss_fn` with a linear stand-in model and random banks against numpy: `softmax` (the
    code's --softmax, NCESoftmaxLoss) is CE(out, 0) per direction and leaves Z unset; `nce` with a
    stored Z uses it."""
    config = cmc_config(loss=loss)
    mesh = sharding.make_mesh(jax.devices()[:1])
    model = _LinearTwoView()
    x = jax.random.normal(jax.random.PRNGKey(0), (B, 4, 4, 3))
    variables = model.init(jax.random.PRNGKey(1), x, train=True)
    ctx = common.StepContext(model, mesh, config, common.method_hparams(cmc, config), N, 10, 4)
    rng = np.random.default_rng(0)
    z = np.array([30.0, 50.0]) if loss == "nce" else np.array([-1.0, -1.0])
    buffers = {
        "bank1": jnp.asarray(np_normalize(rng.normal(size=(N, D))), jnp.float32),
        "bank2": jnp.asarray(np_normalize(rng.normal(size=(N, D))), jnp.float32),
        "z": jnp.asarray(z, jnp.float32),
    }
    index = jnp.arange(B, dtype=jnp.int32) * 3
    inp = common.StepInput(
        step=jnp.int32(5),
        rng=jax.random.PRNGKey(2),
        views=(x,),
        batch={"index": index},
        buffers=buffers,
    )
    got, out = jax.jit(lambda v, i: cmc.loss_fn(ctx, v["params"], {}, i))(variables, inp)
    proj = model.apply(variables, x, train=True)
    f1, f2 = np_normalize(proj["projection1"]), np_normalize(proj["projection2"])
    cols = np.asarray(cmc.draw_columns(inp.rng, index, K, N))
    b1, b2 = (np.asarray(buffers[k], np.float64) for k in ("bank1", "bank2"))
    out_l = np.einsum("bkd,bd->bk", b2[cols], f1) / TAU
    out_ab = np.einsum("bkd,bd->bk", b1[cols], f2) / TAU
    if loss == "softmax":
        expected = np_ce0(out_l) + np_ce0(out_ab)
    else:
        expected = np_nce_criterion(np.exp(out_l) / z[0], N) + np_nce_criterion(
            np.exp(out_ab) / z[1], N
        )
    np.testing.assert_allclose(float(got), expected, rtol=1e-4)
    np.testing.assert_array_equal(np.asarray(out.updates["z"]), z)  # kept (nce) / unused


def test_bank_update_and_z_kept(runs, reference):
    """After step 0: bank_v[idx] = normalize(0.5·bank_v[idx] + 0.5·f_v), other rows untouched; Z is
    set at step 0 and never changes after."""
    states = runs[1]["states"]
    s0, s1 = states[0], states[1]
    f1, f2, _, _ = reference(s0, 0)
    index = runs["batches"][0]["index"]
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


@pytest.mark.own_device_test("cmc")
def test_one_vs_eight_devices(runs):
    """The 8-device run (`train_and_evaluate`) logged the 1-device steps' losses and Z and ends
    with the same Z and, for rows written at step 1, the same banks; from the same state, one
    8-device step gives the 1-device step's losses, banks and Z.

    Why the trajectory is compared loosely: at init, one pre-activation of the ab encoder's
    layer4_0 (the last ReLU of the block) is -4.1e-8 on 1 device and +1.9e-6 on 8 on the 2-core development machine's
    AVX-512 CPU: the ReLU's mask flips, the step-1 gradient of everything below it moves by ~3 %,
    the rows written at steps 2-3 by up to 8e-2, and the losses by up to 2.2e-4 relative. The
    gradient is discontinuous there, so no summation order is "right"; the per-step check is the
    exact one. Two steps of such a difference compound: on an AMD EPYC (Zen 4) CI machine the
    step-2 losses agree to 1e-4 and the step-3 `loss1` differs by 1.2e-2 relative (6.807 vs 6.886),
    while every 8-device step from the 1-device state matches it. So steps 1-2 are compared at
    5e-4 and step 3, after two differing updates, at 5e-2."""
    m1, m8 = runs[1]["metrics"], runs[8]["metrics"]
    assert [r["step"] for r in m8] == [1, 2, 3]
    for key in ("train/loss", "train/loss1", "train/loss2", "train/z1", "train/z2"):
        got, want = [m[key] for m in m8], [m[key] for m in m1]
        np.testing.assert_allclose(got[:2], want[:2], rtol=5e-4, atol=1e-5, err_msg=key)
        np.testing.assert_allclose(got[2], want[2], rtol=5e-2, err_msg=key)
    s1, s8 = runs[1]["states"][-1], runs[8]["final"]
    np.testing.assert_allclose(np.asarray(s1.buffers["z"]), s8.buffers["z"], rtol=1e-5)
    later = np.concatenate([np.asarray(b["index"]) for b in runs["batches"][1:]])
    for name in ("bank1", "bank2"):
        b1, b8 = np.asarray(s1.buffers[name]), np.asarray(s8.buffers[name])
        np.testing.assert_allclose(np.delete(b1, later, 0), np.delete(b8, later, 0), atol=2e-5)
    assert_steps_match(
        runs[8]["one_step"],
        runs[1]["states"],
        runs[1]["metrics"],
        ("train/loss", "train/loss1", "train/loss2", "train/z1", "train/z2"),
        {"bank1": dict(atol=2e-5), "bank2": dict(atol=2e-5), "z": dict(rtol=1e-5)},  # Z ~ 5e3
    )


def test_save_restore_next_step_is_identical(runs, tmp_path):
    """The state after step 2 saved and restored (banks and Z included): step 3 gives the same
    state and loss as the uninterrupted run."""
    exp, step = runs["exp"], runs[1]["step"]
    ckpt = checkpoint.Checkpointer(str(tmp_path))
    ckpt.save(place_state(runs[1]["states"][2], exp), force=True)
    ckpt.wait()
    restored = train.init_or_restore(exp, ckpt)
    np.testing.assert_array_equal(restored.buffers["z"], runs[1]["states"][2].buffers["z"])
    state, m = step(restored, sharding.host_to_global(runs["batches"][2], exp.mesh))
    assert float(m["train/loss"]) == float(runs[1]["metrics"][2]["train/loss"])
    for a, b in zip(
        jax.tree.leaves(jax.device_get(state)), jax.tree.leaves(runs[1]["states"][3]), strict=True
    ):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_views_must_be_in_a_colour_space():
    from ssl_jax.config_checks import ConfigError

    config = cmc_config()
    config.data.recipes = ml_collections.ConfigDict({"tiny": TINY_RECIPE})
    with pytest.raises(ConfigError, match="color_space"):
        train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()[:1]))


def test_evaluation_reads_the_runs_colour_space():
    """`eval_input` (kNN, probe, `load_encoder`, `RowEmbedder`): the recipe's colour space for a
    CMC run, `data.mean/std` otherwise."""
    images = np.random.default_rng(0).integers(0, 256, (3, 8, 8, 3), dtype=np.uint8)
    rgb = jnp.asarray(images, jnp.float32) / 255.0
    c = cmc_config()
    assert eval_ops(c.data) == ({"op": "color_space", "space": "lab"},)
    np.testing.assert_allclose(
        eval_input(jnp.asarray(images), c.data),
        convert(rgb, "lab"),
        atol=1e-5,
    )
    c.data.recipes = ml_collections.ConfigDict({"tiny": TINY_RECIPE})
    assert eval_ops(c.data) == ()
    np.testing.assert_allclose(
        eval_input(jnp.asarray(images), c.data), (rgb - 0.5) / 0.25, atol=1e-6
    )


@pytest.mark.slow
def test_color_fashion_mnist_runlocal_end_to_end(runs, tmp_path):
    """`cmc_color_fashion_mnist:runlocal` through `train_and_evaluate` (the fixture's 8-device run,
    on the small source): finite losses, Z set once; then the encoder reads Lab at evaluation
    (`Encoder.normalize`), its features are both encoders', and the export writes one torchvision
    file per encoder."""
    from ssl_jax.evaluate.encoder import load_encoder

    workdir, losses = runs[8]["workdir"], runs[8]["metrics"]
    assert all(np.isfinite(r["train/loss"]) and r["train/z1"] > 0 for r in losses)
    assert losses[0]["train/z1"] == losses[1]["train/z1"] == losses[2]["train/z1"]

    enc = load_encoder(workdir)
    images = np.random.default_rng(0).integers(0, 256, (4, 32, 32, 3), dtype=np.uint8)
    np.testing.assert_allclose(
        np.asarray(enc.normalize(images)),
        np.asarray(convert(jnp.asarray(images, jnp.float32) / 255.0, "lab")),
        atol=1e-5,
    )
    assert enc.feature_dim == 2 * 32  # two ResNet-18s at width 1/16: 32-d each
    assert sorted(enc.encoder_variables()) == ["encoder1", "encoder2"]
    pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    from ssl_jax import export

    paths = export.export(workdir, "torchvision", str(tmp_path / "cmc.pth"))
    assert paths == [str(tmp_path / "cmc.encoder1.pth"), str(tmp_path / "cmc.encoder2.pth")]


def stem_channels(config) -> dict:
    """`{encoder: (stem conv channels, first stage's 1x1 conv input channels)}` read from the
    parameters' shapes of the config's model (`jax.eval_shape`: nothing is computed)."""
    model = cmc.build_model(config)
    x = jnp.zeros((1, 64, 64, 3), jnp.float32)
    params = jax.eval_shape(lambda: model.init(jax.random.key(0), x, train=False))["params"]
    return {
        name: (p["conv1"]["kernel"].shape[-1], p["layer1_0"]["conv1"]["kernel"].shape[2])
        for name, p in params.items()
        if name.startswith("encoder")
    }


def test_imagenet_bn_groups_are_the_four_gpus_of_dataparallel():
    """`train_CMC.py` wraps the model in `nn.DataParallel` (`models/resnet.py` L329) on 4 GPUs at
    batch 128 (README L83–85): BN over 32 images; `:runlocal` keeps the 4 groups of its batch 32."""
    from ssl_jax import configs

    c = configs.load("configs/cmc_imagenet.py")
    assert c.global_batch_size == 128 and common.method_hparams(cmc, c).query_bn_group_size == 32
    assert stem_channels(c) == {"encoder1": (64, 64), "encoder2": (64, 64)}  # resnet50v1's stem
    local = configs.load("configs/cmc_imagenet.py:runlocal")
    hp = common.method_hparams(cmc, local)
    assert local.global_batch_size == 32 and hp.query_bn_group_size == 8


@pytest.mark.slow
def test_pycontrast_preset_runlocal_two_steps(source, tmp_path):
    """`cmc_pycontrast_imagenet`: PyContrast's `CMC` preset (bank, softmax, K 65536, YDbDr, aug C,
    64-channel stems, BN per 32 images, `normalize(randn)` banks) loads and trains 2 steps."""
    from ssl_jax import configs
    from ssl_jax.output.writers import read_metrics

    c = configs.load("configs/cmc_pycontrast_imagenet.py")
    hp = common.method_hparams(cmc, c)
    assert (hp.loss, hp.num_negatives, hp.temperature, hp.bank_init) == (
        "softmax",
        65536,
        0.07,
        "normal",
    )
    assert (c.global_batch_size, hp.query_bn_group_size) == (256, 32)
    assert c.data.recipes.cmc[-1]["space"] == "ydbdr"
    assert (c.optim.schedule, c.optim.epoch_offset) == ("cosine", 1.0)
    assert stem_channels(c) == {"encoder1": (64, 64), "encoder2": (64, 64)}

    c = configs.load("configs/cmc_pycontrast_imagenet.py:runlocal")
    c.data.data_dir, c.data.color_fashion_mnist.cache_dir = source
    c.total_steps, c.log_every_steps = 2, 1
    # the wiring, not the size: two ResNet-18s at width 1/16 (stems of 8) train as the ResNet-50s
    c.model.backbone, c.model.width, c.model.stem_width = "resnet18", 0.0625, 8
    c.evals = ml_collections.ConfigDict()
    final = jax.device_get(train.train_and_evaluate(c, str(tmp_path)))
    losses = [r["train/loss"] for r in read_metrics(str(tmp_path)) if "train/loss" in r]
    assert len(losses) == 2 and np.all(np.isfinite(losses))
    for name in ("bank1", "bank2"):  # CMCMem's rows are unit vectors from the start
        norms = np.linalg.norm(np.asarray(final.buffers[name]), axis=-1)
        np.testing.assert_allclose(norms, 1.0, rtol=1e-5)
