"""In-training evaluators from `config.evals`: schedules, the sharded kNN, the probe table."""

import contextlib
import dataclasses

import jax
import ml_collections
import numpy as np
import pytest
from jax._src import monitoring

from ssl_jax import configs, train
from ssl_jax.evaluate import evaluators, knn, probe_fit
from ssl_jax.evaluate.encoder import split_features
from tests.helpers import tiny_config


@pytest.mark.parametrize(
    ("every", "runs_at"),
    [(3, [3, 6, 9, 10]), (0, [10]), (-1, []), (20, [10])],
)
def test_schedule(every, runs_at):
    assert [s for s in range(1, 11) if evaluators.should_run(every, s, 10)] == runs_at


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A fresh tiny MoCo v2 state and the evaluation context the train loop builds."""
    config = tiny_config("mocov2")
    exp = train.build_experiment(config)
    state = train.init_or_restore(exp, None)
    ctx = train.eval_context(exp, str(tmp_path_factory.mktemp("evals")))
    return config, exp, state, ctx


def _with_evals(config, **evals):
    config = ml_collections.ConfigDict(config.to_dict())
    config.evals = ml_collections.ConfigDict(evals)
    return config


@contextlib.contextmanager
def _count_compilations():
    """Counts jaxpr traces and backend compilations (persistent-cache hits trace too)."""
    events = []

    def listener(event, duration, **kwargs):
        if event.startswith("/jax/core/compile/"):
            events.append(event)

    monitoring.register_event_duration_secs_listener(listener)
    try:
        yield events
    finally:
        monitoring.unregister_event_duration_listener(listener)


KNN = dict(
    type="knn", every_steps=5, k=20, temperature=0.07, num_train=100, num_test=40, batch_size=16
)


def test_knn_evaluator_matches_host_knn_and_compiles_once(run):
    config, exp, state, ctx = run
    config = _with_evals(config, knn=KNN)
    (ev,) = evaluators.build_evaluators(config, ctx)
    assert isinstance(ev, evaluators.KnnEvaluator) and ev.name == "knn"
    assert [s for s in range(1, 13) if ev.should_run(s, 12)] == [5, 10, 12]
    with _count_compilations() as events:
        first = ev.run(state, 5)
    assert events, "the listener sees the first run's compilations"
    with _count_compilations() as events:
        second = ev.run(state, 10)
    assert events == [], "the second run must reuse the first run's compilations"
    assert first == second
    assert set(first) == {"eval/knn_top1", "eval/knn_top5"}
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    common = dict(mesh=exp.mesh, batch_size=16)
    tr = split_features(ctx.feature_fn, variables, config, "train", limit=100, **common)
    te = split_features(ctx.feature_fn, variables, config, "test", limit=40, **common)
    assert len(tr[0]) == 100 and len(te[0]) == 40
    ref = knn.weighted_knn(*tr, *te, k=20, temperature=0.07)
    assert first["eval/knn_top1"] == pytest.approx(ref["top1"], abs=1e-9)
    assert first["eval/knn_top5"] == pytest.approx(ref["top5"], abs=1e-9)


def test_probe_table_names_the_probe_and_has_the_knn_column(run, capsys):
    """The default: logistic regression (L-BFGS) for every row and a weighted kNN column; the
    table's first line names the probe, the l2 selection and the sizes."""
    config, _, state, ctx = run
    table = dict(
        type="probe_table", every_steps=0, num_train=96, num_test=48, batch_size=16, l2_grid=(1e-2,)
    )
    (ev,) = evaluators.build_evaluators(_with_evals(config, probe_table=table), ctx)
    assert ev.solver == "lbfgs" and (ev.knn_k, ev.knn_temperature) == (200, 0.07)
    assert [s for s in range(1, 7) if ev.should_run(s, 6)] == [6]
    scalars = ev.run(state, 6)
    assert set(scalars) == set(ev.KEYS.values()) | set(ev.KNN_KEYS.values())
    assert all(0.0 <= v <= 1.0 for v in scalars.values())
    text = open(f"{ctx.workdir}/{evaluators.PROBE_TABLE_FILE}").read()
    first, header, *rows = text.splitlines()
    for words in ("multinomial logistic regression", "l2 chosen from (0.01)", "held-out 10%"):
        assert words in first
    assert "features: pooled (last stage, 64-d)" in first  # the probe and kNN jobs' words
    assert "train 96 (train), test 48 (test)" in first and "kNN: weighted, k 200, τ 0.07" in first
    assert "kNN top-1" in header
    assert [r.split("  ")[0] for r in rows] == ["pretrained", "random init", "raw pixels"]
    for row, name in zip(rows, ("pretrained", "random init", "raw pixels")):
        assert row.count("%") == 3  # probe top-1, top-5, kNN top-1
        knn_cell = f"{100 * scalars[ev.KNN_KEYS[name]]:.2f}%"
        assert knn_cell in row, (row, knn_cell)
    assert "raw pixels" in capsys.readouterr().out


def test_probe_table_ridge_stays_an_option(run):
    config, _, _, ctx = run
    table = dict(type="probe_table", every_steps=0, solver="ridge", knn_k=0, batch_size=16)
    (ev,) = evaluators.build_evaluators(_with_evals(config, probe_table=table), ctx)
    assert ev.l2_grid == probe_fit.L2_GRIDS["ridge"]  # an empty grid: the solver's own
    title = ev.title(60000, 10000, 512)
    assert title.startswith("Linear probe: ridge regression") and "kNN" not in title
    assert "features: pooled (last stage, 512-d)" in title
    assert "train 60000 (train), test 10000 (test)" in title


def test_probe_table_on_stage_features(run):
    """`features='stages'`: the encoder rows are probed on every stage's pooled output (the
    context's `stage_feature_fn`), and the title says so; the default is the pooled output."""
    config, exp, state, ctx = run
    table = dict(type="probe_table", every_steps=0, features="stages", knn_k=0, batch_size=16)
    (ev,) = evaluators.build_evaluators(_with_evals(config, probe_table=table), ctx)
    assert "features: stages (every stage's pool, 960-d)" in ev.title(96, 48, 960)
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    f, _ = ev._features(variables, "train", 32)
    pooled, _ = split_features(
        ctx.feature_fn, variables, config, "train", mesh=exp.mesh, batch_size=16, limit=32
    )
    d = pooled.shape[1]
    assert f.shape == (32, d // 8 * 15)  # ResNet stage widths w, 2w, 4w, 8w
    np.testing.assert_allclose(f[:, -d:], pooled, rtol=1e-5, atol=1e-6)
    default = dict(type="probe_table", every_steps=0, knn_k=0, batch_size=16)
    (ev,) = evaluators.build_evaluators(_with_evals(config, probe_table=default), ctx)
    assert ev.features == "pooled" and "features: pooled (last stage, 64-d)" in ev.title(96, 48, 64)
    no_stages = dataclasses.replace(ctx, stage_feature_fn=None)  # refused when built, not at use
    with pytest.raises(ValueError, match="features='stages': this run has no stage features"):
        evaluators.build_evaluators(_with_evals(config, probe_table=table), no_stages)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (dict(type="knnn", every_steps=1), r"evals.bad.type='knnn'.*allowed values.*'knn'"),
        (dict(every_steps=1), r"evals.bad.type=None"),
        (dict(KNN, kk=3), r"evals.bad.kk is not a key"),
        (dict(KNN, every_steps=-2), r"evals.bad.every_steps=-2"),
        (dict(KNN, batch_size=12), r"evals.bad.batch_size=12"),
        (dict(type="probe_table", solver="svm"), r"evals.bad.solver='svm'"),
        (dict(type="probe_table", knn_k=-1), r"evals.bad.knn_k=-1"),
        (dict(type="probe_table", iterations=0), r"evals.bad.iterations=0"),
        (dict(type="probe_table", features="layer3"), r"evals.bad.features='layer3'"),
    ],
)
def test_bad_evaluator_configs_are_config_errors(run, entry, message):
    config, _, _, ctx = run
    with pytest.raises(configs.ConfigError, match=message):
        evaluators.build_evaluators(_with_evals(config, bad=entry), ctx)


def test_no_evaluators_by_default_in_tests_and_knn_in_base_config(run):
    config, _, _, ctx = run
    assert evaluators.build_evaluators(config, ctx) == []
    base = configs.base_config().evals.knn
    assert base.type == "knn" and base.every_steps == 5000 and jax.device_count() == 8
