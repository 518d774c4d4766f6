"""The method protocol: every registered method satisfies it and has a `:runlocal` config and tests
(both found by scanning `configs/` and `tests/methods/`); buffers are any pytree with specs as a
prefix; `prepare_buffers` runs once on a fresh run and never on resume; `RowEmbedder` writes the
whole split by index without gathering; a two-encoder model is evaluated and exported."""

import dataclasses
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

from ssl_jax import configs, train
from ssl_jax.evaluate.encoder import (
    RowEmbedder,
    features_apply,
    load_encoder,
    split_features,
    uint8_feature_fn,
)
from ssl_jax.methods import METHODS, common, memory
from ssl_jax.models import ResNet
from ssl_jax.parallel import sharding
from ssl_jax.state import buffer_shardings
from tests.helpers import (
    ROOT,
    config_files_by_method,
    runlocal_configs,
    save_random_workdir,
    tiny_config,
)
from tests.methods import toy_methods


def missing_pieces(name: str, method) -> list[str]:
    """What method `name` lacks of its configs and tests: a `configs/*.py` with `method=name` whose
    `:runlocal` variant differs from its full run, and `tests/methods/test_<m>.py` naming the method,
    `<m>` being the module that defines its `loss_fn` (ReSSL's is SCE's: `test_sce.py`)."""
    missing = []
    files = config_files_by_method().get(name, [])
    local = runlocal_configs()
    if not any(configs.load(os.path.join(ROOT, "configs", f)) != local[f] for f in files):
        missing.append(f"a configs/*.py with method={name!r} and a ':runlocal' variant")
    module = method.loss_fn.__module__.rpartition(".")[2]
    test_file = os.path.join(ROOT, "tests", "methods", f"test_{module}.py")
    named = rf"[\"']{name}[\"']|\b{name}\."
    if not (os.path.isfile(test_file) and re.search(named, open(test_file).read())):
        missing.append(f"tests/methods/test_{module}.py naming {name!r}")
    return missing


def model_encoders(model) -> tuple[str, ...]:
    """The names of the model's ResNet sub-modules, in declaration order."""
    fields = dataclasses.fields(model)
    return tuple(f.name for f in fields if isinstance(getattr(model, f.name, None), ResNet))


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_has_a_runlocal_config_and_tests(name):
    assert missing_pieces(name, METHODS[name]) == []


def test_a_method_without_configs_or_tests_is_reported():
    assert missing_pieces("prepared_bank", toy_methods.PreparedBank) == [
        "a configs/*.py with method='prepared_bank' and a ':runlocal' variant",
        "tests/methods/test_toy_methods.py naming 'prepared_bank'",
    ]


@pytest.mark.parametrize("name", sorted(METHODS))
def test_every_method_satisfies_the_protocol(name):
    """Checked on the method's first `:runlocal` config (by file name)."""
    method = METHODS[name]
    assert isinstance(method, common.Method), name
    assert isinstance(method.EMA_BEFORE_KEYS, bool) and isinstance(method.USES_TARGET, bool)
    # buffer_specs is a prefix of init_buffers' tree (checked without allocating anything)
    first = config_files_by_method()[name][0]
    exp = train.build_experiment(configs.load(os.path.join(ROOT, "configs", first) + ":runlocal"))
    abstract = jax.eval_shape(lambda r: method.init_buffers(r, exp.ctx), jax.random.PRNGKey(0))
    shardings = buffer_shardings(exp.mesh, method.buffer_specs(exp.ctx), abstract)
    assert jax.tree.structure(shardings) == jax.tree.structure(abstract)
    assert hasattr(exp.ctx.model, "features")
    assert exp.ctx.model.ENCODERS == model_encoders(exp.ctx.model) != ()  # what the export writes


def test_a_module_missing_a_hook_is_not_a_method():
    class Incomplete:
        EMA_BEFORE_KEYS = False
        USES_TARGET = False

    assert not isinstance(Incomplete, common.Method)
    assert isinstance(toy_methods.PreparedBank, common.Method)
    assert isinstance(toy_methods.TwoEncoder, common.Method)


def _bank_config():
    return tiny_config("ir", temperature=0.07, num_negatives=32, bank_size=64, bank_momentum=0.5)


@pytest.fixture
def prepared_bank(monkeypatch):
    monkeypatch.setitem(METHODS, "prepared_bank", toy_methods.PreparedBank)
    toy_methods.PREPARE_CALLS.clear()
    config = _bank_config()
    config.method = "prepared_bank"
    return config


def test_pytree_buffers_are_sharded_as_their_spec_prefix(prepared_bank):
    exp = train.build_experiment(prepared_bank)
    state = train.init_or_restore(exp, None)
    buffers = state.buffers
    for bank in buffers["banks"].values():
        assert {s.data.shape for s in bank.addressable_shards} == {(64 // 8, 16)}
    assert {s.data.shape for s in buffers["labels"].addressable_shards} == {(64 // 8,)}
    assert buffers["centroids"].sharding.spec == P() and buffers["prepared"].sharding.spec == P()


def test_row_embedder_writes_every_example_at_its_index():
    config = tiny_config("ir")
    for devices in (jax.devices()[:1], jax.devices()):
        mesh = sharding.make_mesh(devices)
        exp = train.build_experiment(config, mesh=mesh)
        state = train.init_or_restore(exp, None)
        variables = {"params": state.params, "batch_stats": state.batch_stats}
        apply = features_apply(exp.ctx.model)
        table = memory.init_rows(jax.random.PRNGKey(1), 64, exp.ctx.model.feature_dim, mesh)
        embedder = RowEmbedder(config, mesh, num_rows=64, batch_size=24)  # 64 = 2·24 + 16: padding
        table = embedder.embed_rows(table, apply, variables)
        assert {s.data.shape[0] for s in table.addressable_shards} == {64 // len(devices)}
        fn = uint8_feature_fn(apply, config.data, config)  # the reference: split_features
        expected, _ = split_features(
            fn, variables, config, "train", mesh=mesh, batch_size=16, limit=64
        )
        np.testing.assert_allclose(np.asarray(table), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_prepare_buffers_runs_once_on_a_fresh_run_and_never_on_resume(prepared_bank, tmp_path):
    config = prepared_bank
    config.total_steps = 4
    config.checkpoint_every_steps = 2
    workdir = str(tmp_path)
    train.train_and_evaluate(config, workdir, stop_after_steps=2)
    assert toy_methods.PREPARE_CALLS == [0]
    state = train.train_and_evaluate(config, workdir)  # resumes at step 2
    assert toy_methods.PREPARE_CALLS == [0], "prepare_buffers ran again on resume"
    assert int(jax.device_get(state.step)) == 4
    assert int(jax.device_get(state.buffers["prepared"])) == 1
    labels = np.asarray(jax.device_get(state.buffers["labels"]))
    assert (labels >= 0).sum() > 0  # the label bank received the batches' labels by index
    # the rows no step has written still hold the prepared (normalised) embeddings, not noise
    bank = np.asarray(jax.device_get(state.buffers["banks"]["query"]))
    np.testing.assert_allclose(np.linalg.norm(bank, axis=1), 1.0, rtol=1e-5)


def test_prepared_bank_holds_the_initial_projections(prepared_bank):
    exp = train.build_experiment(prepared_bank)
    state = train.prepare_fresh_state(exp, train.init_or_restore(exp, None))
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    model = exp.ctx.model
    fn = uint8_feature_fn(
        lambda v, x, train: model.apply(v, x, train=train)["projection"],
        prepared_bank.data,
        prepared_bank,
    )
    projections, _ = split_features(
        fn, variables, prepared_bank, "train", mesh=exp.mesh, batch_size=16, limit=64
    )
    expected = projections / np.linalg.norm(projections, axis=1, keepdims=True)
    got = np.asarray(jax.device_get(state.buffers["banks"]["query"]))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    spare = np.asarray(jax.device_get(state.buffers["banks"]["spare"]))
    assert not np.allclose(spare, expected, atol=1e-2)  # only the bank the hook named changed


@pytest.fixture
def two_encoder_workdir(monkeypatch, tmp_path):
    monkeypatch.setitem(METHODS, "two_encoder", toy_methods.TwoEncoder)
    config = tiny_config("ir", temperature=0.07, num_negatives=32, bank_size=64, bank_momentum=0.5)
    config.method = "two_encoder"
    config.model.width = 0.25  # each encoder at half: 1/8
    config.data.channels = 3
    config.data.mean, config.data.std = (0.5,) * 3, (0.25,) * 3
    return config, save_random_workdir(config, str(tmp_path / "run"))


def test_two_encoder_model_features_are_both_encoders(two_encoder_workdir):
    config, workdir = two_encoder_workdir
    enc = load_encoder(workdir)
    assert enc.feature_dim == 2 * 64
    x = np.random.default_rng(0).normal(size=(5, 16, 16, 3)).astype(np.float32)
    f = np.asarray(enc.features(x))
    parts = enc.encoder_variables()
    assert sorted(parts) == ["ab_encoder", "l_encoder"]
    l_only = enc.model.l_encoder.apply(parts["l_encoder"], jnp.asarray(x[..., :1]), False)
    np.testing.assert_allclose(f[:, :64], np.asarray(l_only), rtol=1e-5, atol=1e-5)


def test_two_encoder_export_writes_each_encoder(two_encoder_workdir, tmp_path, capsys):
    torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")
    from torch_resnet import TorchResNet

    from ssl_jax import export

    config, workdir = two_encoder_workdir
    out = str(tmp_path / "enc.pth")
    paths = export.export(workdir, "torchvision", out)
    assert paths == [str(tmp_path / "enc.l_encoder.pth"), str(tmp_path / "enc.ab_encoder.pth")]
    assert "2 encoders" in capsys.readouterr().out
    assert not os.path.exists(out)
    enc = load_encoder(workdir)
    x = np.random.default_rng(1).normal(size=(4, 16, 16, 3)).astype(np.float32)
    f = np.asarray(enc.features(x))
    got = []
    for path, chans in zip(paths, (slice(0, 1), slice(1, 3))):
        net = TorchResNet(18, "cifar", 0.125, in_chans=chans.stop - chans.start).eval()
        net.load_state_dict(torch.load(path), strict=True)
        with torch.no_grad():
            got.append(net(torch.from_numpy(x[..., chans].transpose(0, 3, 1, 2).copy())).numpy())
    np.testing.assert_allclose(np.concatenate(got, axis=1), f, rtol=1e-4, atol=1e-4)
    with pytest.raises(export.ExportError, match="2 encoders"):
        export.export(workdir, "detectron2", str(tmp_path / "enc.pkl"))
