"""`configs.load` / `configs.apply_override` (what scripts and notebooks use instead of the flags), the
config files (flat, loadable from anywhere, valid), `configs/common.py` and validation."""

import dataclasses
import glob
import os
import re
import subprocess
import sys

import ml_collections
import pytest

from configs import common
from ssl_jax import config_checks, configs, validation


def test_load_applies_the_config_argument():
    full = configs.load("configs/sce_fashion_mnist.py")
    local = configs.load("configs/sce_fashion_mnist.py:runlocal")
    assert full.method == local.method == "sce"
    assert local.total_steps < full.total_steps


def test_load_missing_file_is_a_config_error():
    with pytest.raises(configs.ConfigError, match="does not exist"):
        configs.load("configs/no_such_config.py")


def test_apply_override_parses_and_casts_like_the_flags():
    c = configs.load("configs/sce_fashion_mnist.py")
    configs.apply_override(c, "optim.base_lr=1")  # int for a float field becomes a float
    configs.apply_override(c, "model.stem=imagenet")  # not a literal: kept as a string
    configs.apply_override(c, "total_steps=123")
    configs.apply_override(c, "data.views=['weak', 'weak']")  # list for a tuple field
    assert c.optim.base_lr == 1.0 and isinstance(c.optim.base_lr, float)
    assert c.model.stem == "imagenet"
    assert c.total_steps == 123
    assert c.data.views == ("weak", "weak")


@pytest.mark.parametrize(
    "assignment, message",
    [
        ("optim.base_lrr=1.0", "base_lrr"),
        ("optimm.base_lr=1.0", "optimm"),
        ("total_steps=many", "total_steps='many'"),
        ("total_steps", "key=value"),
    ],
)
def test_apply_override_rejects_bad_input(assignment, message):
    c = configs.load("configs/sce_fashion_mnist.py")
    with pytest.raises(configs.ConfigError, match=message):
        configs.apply_override(c, assignment)


# --------------------------------------------------------------------------------------------------
# The config files: flat, loadable by path from anywhere, valid with and without `:runlocal`
# --------------------------------------------------------------------------------------------------


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG_FILES = sorted(
    p
    for p in glob.glob(os.path.join(ROOT, "configs", "*.py"))
    if os.path.basename(p) not in ("__init__.py", "common.py")
)
EVAL_JOB_FILES = ("knn.py", "linear_probe.py")
PRETRAIN_FILES = [p for p in CONFIG_FILES if os.path.basename(p) not in EVAL_JOB_FILES]


def _name(path):
    return os.path.basename(path)[:-3]


@pytest.mark.parametrize("arg", [None, "runlocal"])
@pytest.mark.parametrize("path", CONFIG_FILES, ids=_name)
def test_every_config_loads_and_validates(path, arg):
    """No data is read: `validate` checks keys, types, ranges and the evals on 8 devices (an eval
    job without `config.init` stops at that one, by design)."""
    c = configs.load(path + (f":{arg}" if arg else ""))
    if c.job == "pretrain":
        validation.validate(c, num_devices=8)
        assert set(c.evals) == {"knn", "probe_table"}
        assert "knn" not in c and "probe" not in c and "final_probe_table" not in c
    else:
        with pytest.raises(configs.ConfigError, match="config.init"):
            validation.validate(c, num_devices=8)
        c.init = "/some/workdir"
        validation.validate(c, num_devices=8)


def _parent(path):
    """The config `path` is built on (`from configs import sce_cifar10`), or None; at most one."""
    source = open(path).read()
    imported = set(re.findall(r"from configs import (\w+(?:, \w+)*)", source))
    imported = {name for names in imported for name in names.split(", ")}
    imported |= set(re.findall(r"from configs\.(\w+) import", source))
    parents = imported - {"common"}
    assert len(parents) <= 1, (path, imported)
    return os.path.join(ROOT, "configs", f"{parents.pop()}.py") if parents else None


@pytest.mark.parametrize("path", CONFIG_FILES, ids=_name)
def test_config_files_are_flat(path):
    """One file shows one run's numbers, or a parent's `get_config` and the few numbers it changes
    (`ressl_X` = `sce_X` + the loss, `sce_cifar100` = `sce_cifar10` + the data): no config loads
    another by path or puts anything on `sys.path`, and a config is at most two parents away from
    one built on no other (`ressl_stl10` → `sce_stl10` → `sce_cifar10`)."""
    source = open(path).read()
    banned = (
        "sibling(",
        "spec_from_file_location",
        "configs.load(",
        "edit=",
        "def build(",
        "sys.path",
    )
    for pattern in banned:
        assert pattern not in source, (path, pattern)
    chain = [path]
    while (parent := _parent(chain[-1])) is not None:
        assert parent in CONFIG_FILES and parent not in chain, (chain, parent)
        chain.append(parent)
    assert len(chain) <= 3, [_name(p) for p in chain]
    assert not hasattr(configs, "sibling")


@pytest.mark.parametrize("old", sorted(common.RENAMED))
def test_an_old_config_name_gives_the_new_config_and_says_so(old, capsys):
    """`configs/scce_X.py` (SCE's names before `sce_X.py`), kept one release: the same config,
    with and without an argument, and one stderr line that gives the new name."""
    new = common.RENAMED[old]
    for arg in ("", ":runlocal"):
        assert configs.load(f"{ROOT}/configs/{old}.py{arg}") == configs.load(
            f"{ROOT}/configs/{new}.py{arg}"
        )
        lines = capsys.readouterr().err.splitlines()
        assert lines == [
            f"configs/{old}.py is renamed configs/{new}.py; the old name goes in the next release"
        ]


def test_default_job_configs_run_the_probe_table_and_the_default_job_a_knn_monitor():
    for name in ("sce", "mocov2", "jcl", "ir", "ressl"):
        c = configs.load(f"{ROOT}/configs/{name}_fashion_mnist.py")
        assert c.evals.probe_table.every_steps == 0, name  # only at the last step
        assert c.evals.probe_table.solver == "lbfgs" and c.evals.probe_table.knn_k == 200, name
        if name == "sce":  # the default job: the kNN monitor 4 times, on 10k / 10k images
            assert c.total_steps // c.evals.knn.every_steps == 4 and c.total_steps % 4 == 0
            assert (c.evals.knn.num_train, c.evals.knn.num_test) == (10_000, 10_000)
        else:
            assert c.evals.knn.every_steps == -1, name  # never
        local = configs.load(f"{ROOT}/configs/{name}_fashion_mnist.py:runlocal")
        assert local.evals.probe_table.num_train == 512 and local.evals.knn.k == 20
        assert local.evals.probe_table.num_test == 256, name  # not all 10k test images


def test_ressl_authors_configs_are_the_authors_recipe():
    """`ressl_authors_*`: ReSSL with the EMA before the keys (method `ressl_authors`), a constant
    momentum, a Linear-ReLU-Linear projector with biases and no BN, no lr scaling."""
    from ssl_jax.methods import METHODS

    expected = {  # name: (m, queue, projector hidden, out, batch, lr, wd, exclude_1d, backbone)
        "ressl_authors_imagenet": (0.999, 131072, (4096,), 512, 256, 0.05, 1e-4, True, "resnet50"),
        "ressl_authors_cifar10": (0.99, 4096, (2048,), 128, 256, 0.06, 5e-4, False, "resnet18"),
    }
    for name, (m, queue, hidden, out, batch, lr, wd, excl, backbone) in expected.items():
        c = configs.load(f"{ROOT}/configs/{name}.py")
        assert c.method == "ressl_authors" and METHODS[c.method].EMA_BEFORE_KEYS is True, name
        assert (c.ema.base, c.ema.schedule) == (m, "constant"), name
        mc = c.method_config
        assert (mc.temperature, mc.temperature_m, mc.queue_size) == (0.1, 0.04, queue), name
        assert mc.symmetric is False and c.data.views == ("weak", "strong"), name
        p = c.model.projector
        assert (p.hidden_dims, p.out_dim, p.use_bn, p.last_bn) == (hidden, out, False, False)
        assert p.hidden_bias and p.last_bias and not c.model.predictor.enabled, name
        assert c.model.backbone == backbone and c.num_epochs == 200, name
        o = c.optim
        assert (c.global_batch_size, o.base_lr, o.lr_scaling) == (batch, lr, "none"), name
        assert (o.weight_decay, o.exclude_1d, o.warmup_epochs) == (wd, excl, 5.0), name
        assert (o.warmup_form, o.schedule, o.schedule_unit) == ("linear", "cosine", "step"), name
        weak_ops = [op["op"] for op in c.data.recipes.weak]
        assert weak_ops == ["random_resized_crop", "horizontal_flip"], name
        text = open(f"{ROOT}/configs/{name}.py").read()
        assert "# BN (authors):" in text, name  # for the BN-group conversion (issue 12 item 1)
    # SCE's reproduction of ReSSL stays the `ressl` method (EMA after the optimiser)
    assert configs.load(f"{ROOT}/configs/ressl_imagenet.py").method == "ressl"
    assert METHODS["ressl"].EMA_BEFORE_KEYS is False


def test_imagenet100_projector_has_no_bn():
    """SCE Sec. 4.1 / `projector_resnet50_mlp2.yaml`: 2048 → 4096 (bias, ReLU) → 256 (bias), no BN;
    `:imagenet2012` (Sec. 4.2) keeps the 3-layer BN projector."""
    for name in ("sce_imagenet100", "ressl_imagenet100"):
        p = configs.load(f"{ROOT}/configs/{name}.py").model.projector
        assert (p.hidden_dims, p.out_dim) == ((4096,), 256), name
        assert (p.use_bn, p.last_bn, p.hidden_bias, p.last_bias) == (False, False, True, True)
    p = configs.load(f"{ROOT}/configs/sce_imagenet100.py:imagenet2012").model.projector
    assert (p.hidden_dims, p.use_bn, p.last_bn) == ((2048, 2048), True, True)


def test_configs_load_by_path_from_another_directory(tmp_path):
    """`--config=/abs/path/configs/X.py:arg` as ml_collections' config_flags loads it, from a
    directory where neither `configs` nor `ssl_jax` is on the path: both come from the install
    (`pip install -e .` installs `configs` beside `ssl_jax`; a config has no `sys.path` lines)."""
    code = (
        "import sys\n"
        "from absl import flags\n"
        "from ml_collections import config_flags\n"
        "config_flags.DEFINE_config_file('config')\n"
        "flags.FLAGS(['prog', '--config=' + sys.argv[1]])\n"
        "c = flags.FLAGS.config\n"
        "print(c.method, len(c.data.views), c.seed, c.data.name)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    spec = os.path.join(ROOT, "configs", "jcl_cifar10.py") + ":keys=2,runlocal"
    out = subprocess.run(
        [sys.executable, "-c", code, spec],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr + "\n(an install without `configs`? `pip install -e .`)"
    assert out.stdout.split() == ["jcl", "3", "0", "fashion_mnist"]


def test_parse_arg():
    a = common.parse_arg("runlocal,keys=8", keys=4)
    assert (a.runlocal, a.keys) == (True, 8)
    a = common.parse_arg(None, keys=4, imagenet2012=False)
    assert (a.runlocal, a.keys, a.imagenet2012) == (False, 4, False)
    assert common.parse_arg(" runlocal , ").runlocal
    with pytest.raises(
        configs.ConfigError, match="'runlocall' is not known; allowed: 'runlocal', 'keys=<int>'"
    ):
        common.parse_arg("runlocall", keys=4)
    with pytest.raises(configs.ConfigError, match="keys takes a int"):
        common.parse_arg("keys=many", keys=4)
    with pytest.raises(configs.ConfigError, match="needs a value"):
        common.parse_arg("keys", keys=4)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("configs/mocov2_cifar10.py:keys=8", "'keys=8' is not known; allowed: 'runlocal'"),
        ("configs/jcl_cifar10.py:keys=0", "keys=1, keys=2"),
        ("configs/linear_probe.py:moco,sce", "at most one preset"),
        ("configs/knn.py:fast", "'fast' is not known"),
    ],
)
def test_config_arguments_are_checked(spec, message):
    with pytest.raises(configs.ConfigError, match=message):
        configs.load(os.path.join(ROOT, spec))


def test_jcl_keys_argument_sets_the_views():
    for name, default in (
        ("jcl_imagenet", 4),
        ("jcl_imagenet_paper", 5),
        ("jcl_imagenet100_r18", 9),
    ):
        c = configs.load(f"{ROOT}/configs/{name}.py")
        assert c.method_config.num_keys == default and len(c.data.views) == default + 1
        c = configs.load(f"{ROOT}/configs/{name}.py:keys=2,runlocal")
        assert c.method_config.num_keys == 2 and len(c.data.views) == 3


def _texts_naming_configs() -> list[str]:
    """The README, the user docs, the pages made from the results and the config files."""
    paths = [os.path.join(ROOT, "README.md")]
    for folder in ("docs", "results"):
        paths += glob.glob(os.path.join(ROOT, folder, "**", "*.md"), recursive=True)
    return [open(p).read() for p in [*paths, *CONFIG_FILES]]


def test_readme_and_docs_name_configs_that_exist():
    """Every `configs/X.py[:arg]` the README, the docs and the config docstrings name loads."""
    texts = _texts_naming_configs()
    specs = set()
    for text in texts:
        specs |= set(re.findall(r"configs/([a-z0-9_]+\.py(?::(?:[a-z0-9_,=]|True|False)+)?)", text))
        # `{jcl,mocov2}_fashion_mnist.py` and plain names in backticks
        for a, b in re.findall(r"configs/\{([a-z0-9_,]+)\}(_[a-z0-9_]+\.py)", text):
            specs |= {f"{x}{b}" for x in a.split(",")}
        # config names in backticks (`sce_cifar10.py`); other files (`main_lincls.py`) are not ours
        named = re.findall(
            r"`((?:mocov2|ir|jcl|sce|ressl)_[a-z0-9_]+\.py(?::[a-z0-9_,=]+)?)`", text
        )
        specs |= set(named)
    known = {os.path.basename(p) for p in CONFIG_FILES}
    assert len(specs) > 20
    for spec in sorted(specs):
        if spec.startswith("common.py"):
            continue
        assert spec.partition(":")[0] in known, spec
        configs.load(os.path.join(ROOT, "configs", spec))


# --------------------------------------------------------------------------------------------------
# Validation: ranges, evals, method hyper-parameters
# --------------------------------------------------------------------------------------------------


def _local():
    return configs.load(os.path.join(ROOT, "configs/sce_fashion_mnist.py:runlocal"))


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("total_steps", 0, r"config.total_steps=0: allowed -1 \(from epochs\) or > 0"),
        ("total_steps", -2, r"config.total_steps=-2: allowed \[-1, inf\)"),
        ("log_every_steps", 0, r"config.log_every_steps=0: allowed \[1, inf\)"),
        ("checkpoint_every_steps", 0, "config.checkpoint_every_steps=0"),
        ("keep_checkpoints", 0, "config.keep_checkpoints=0"),
        ("global_batch_size", 12, "config.global_batch_size=12 must be a positive multiple"),
        ("data.image_size", 0, "config.data.image_size=0"),
        ("data.train_subset", -1, r"config.data.train_subset=-1: allowed \[0, inf\)"),
        ("data.shuffle_buffer", 0, "config.data.shuffle_buffer=0"),
        (
            "data.eval_crop_fraction",
            0.0,
            r"config.data.eval_crop_fraction=0.0: allowed \(0.0, 1.0\]",
        ),
        ("data.eval_crop_fraction", 1.5, "config.data.eval_crop_fraction=1.5"),
        ("data.name", "mnist", "config.data.name='mnist' is not allowed"),
        ("model.stem", "tiny", "config.model.stem='tiny'"),
        ("optim.name", "rmsprop", "config.optim.name=.rmsprop."),
        ("optim.base_lr", -1.0, "config.optim.base_lr=-1.0 is not allowed"),
        ("ema.schedule", "linear", "config.ema.schedule='linear'"),
        (
            "evals.knn.type",
            "linear",
            r"config.evals.knn.type='linear' is not allowed.*'knn', 'probe_table'",
        ),
        ("evals.knn.every_steps", -2, r"config.evals.knn.every_steps=-2: allowed \[-1, inf\)"),
        ("evals.knn.k", 0, r"config.evals.knn.k=0: allowed \[1, inf\)"),
        ("evals.knn.temperature", 0.0, r"config.evals.knn.temperature=0.0: allowed \(0.0, inf\)"),
        ("evals.knn.num_train", 0, "config.evals.knn.num_train=0: allowed -1"),
        ("evals.knn.num_test", -2, "config.evals.knn.num_test=-2"),
        (
            "evals.knn.batch_size",
            60,
            r"config.evals.knn.batch_size=60 must be a positive multiple of the device count \(8\)",
        ),
        (
            "evals.probe_table.solver",
            "sgd",
            "config.evals.probe_table.solver='sgd'.*'lbfgs', 'ridge'",
        ),
        ("evals.probe_table.l2_grid", (0.1, -1.0), "config.evals.probe_table.l2_grid=-1.0"),
        ("evals.probe_table.num_train", 0, "config.evals.probe_table.num_train=0"),
        ("evals.probe_table.batch_size", 0, "config.evals.probe_table.batch_size=0"),
    ],
)
def test_validate_names_the_key_and_the_allowed_values(key, value, message):
    c = _local()
    *parents, leaf = key.split(".")
    node = c
    for p in parents:
        node = node[p]
    node[leaf] = value
    with pytest.raises(configs.ConfigError, match=message):
        validation.validate(c, num_devices=8)


def test_an_evaluator_entry_takes_the_evaluators_defaults_for_missing_keys():
    c = _local()
    c.evals = ml_collections.ConfigDict({"final": dict(type="probe_table", every_steps=0)})
    validation.validate(c, num_devices=8)  # solver, l2_grid, batch_size 512 ... from the evaluator
    c.evals.final.solvr = "ridge"
    with pytest.raises(configs.ConfigError, match="config.evals.final.solvr is not a key"):
        validation.validate(c, num_devices=8)
    c.evals = ml_collections.ConfigDict({"nn": dict(type="knn", every_steps=10, batch_size=12)})
    with pytest.raises(configs.ConfigError, match="config.evals.nn.batch_size=12"):
        validation.validate(c, num_devices=8)


def test_validate_seed_is_an_int():
    c = _local().to_dict()
    c["seed"] = "0"  # a ConfigDict keeps the type of a field; a config built from a dict may not
    with pytest.raises(configs.ConfigError, match="config.seed='0': allowed an int"):
        validation.validate(ml_collections.ConfigDict(c), num_devices=8)


def test_validate_num_epochs_only_counts_without_total_steps():
    c = _local()
    c.num_epochs = 0.0
    validation.validate(c, num_devices=8)  # total_steps=6 sets the length
    c.total_steps = -1
    with pytest.raises(configs.ConfigError, match=r"config.num_epochs=0.0: allowed \(0.0, inf\)"):
        validation.validate(c, num_devices=8)


def test_evals_entries_are_checked_by_type():
    c = _local()
    c.evals.knn.kk = 3
    with pytest.raises(
        configs.ConfigError, match=r"config.evals.knn.kk is not a key of a 'knn' evaluator"
    ):
        validation.validate(c, num_devices=8)
    c = _local()
    c.evals.probe_table.k = 3
    with pytest.raises(configs.ConfigError, match="config.evals.probe_table.k is not a key"):
        validation.validate(c, num_devices=8)
    c = _local()
    c.evals.knn2 = ml_collections.ConfigDict(dict(every_steps=10))
    with pytest.raises(configs.ConfigError, match="config.evals.knn2 must be a dict with a 'type'"):
        validation.validate(c, num_devices=8)
    c = _local()
    del c.evals.knn
    del c.evals.probe_table
    validation.validate(c, num_devices=8)  # no evaluator at all is fine


def test_a_disabled_evaluator_needs_no_device_multiple_batch():
    c = _local()
    c.evals.knn.update(every_steps=-1, batch_size=500)
    validation.validate(c, num_devices=8)
    c.evals.knn.every_steps = 0
    with pytest.raises(configs.ConfigError, match="config.evals.knn.batch_size=500"):
        validation.validate(c, num_devices=8)


@dataclasses.dataclass(frozen=True)
class _Hparams:
    temperature: float = config_checks.hp_field(0.2, low=0.0, low_open=True)
    momentum: float = config_checks.hp_field(0.99, low=0.0, high=1.0)
    fraction: float = config_checks.hp_field(0.5, low=0.0, high=1.0, low_open=True, high_open=True)
    queue_size: int = config_checks.hp_field(4096, low=1)
    form: str = config_checks.hp_field("eq8", choices=("eq8", "eq9"))
    free: float = 3.0


def _hparams(**method_config):
    c = ml_collections.ConfigDict(dict(method="toy", method_config=method_config))
    return config_checks.hparams_from_config(_Hparams, c)


def test_hp_field_ranges_are_checked_by_hparams_from_config():
    hp = _hparams(temperature=1, momentum=1.0, fraction=0.25, queue_size=1, form="eq9", free=-5.0)
    assert hp.temperature == 1.0 and isinstance(hp.temperature, float) and hp.form == "eq9"
    assert _hparams() == _Hparams()  # the defaults are in range
    bad = [
        (dict(temperature=-1.0), r"^config.method_config.temperature=-1.0: allowed \(0.0, inf\)$"),
        (dict(temperature=0.0), r"temperature=0.0: allowed \(0.0, inf\)"),
        (dict(momentum=1.5), r"^config.method_config.momentum=1.5: allowed \[0.0, 1.0\]$"),
        (dict(fraction=1.0), r"fraction=1.0: allowed \(0.0, 1.0\)"),
        (dict(queue_size=0), r"queue_size=0: allowed \[1, inf\)"),
        (
            dict(form="eq7"),
            r"config.method_config.form='eq7' is not allowed; allowed values: \['eq8', 'eq9'\]",
        ),
        (dict(temperature="hot"), "temperature='hot' has type str"),
        (dict(temprature=0.1), "temprature is not a field of method 'toy'"),
    ]
    for mc, message in bad:
        with pytest.raises(configs.ConfigError, match=message):
            _hparams(**mc)


def test_hp_field_metadata_is_plain_dataclass_metadata():
    f = {f.name: f for f in dataclasses.fields(_Hparams)}
    assert f["temperature"].default == 0.2
    assert f["form"].metadata["ssl_jax_choices"] == ("eq8", "eq9")
    assert "ssl_jax_range" not in f["free"].metadata


def test_apply_override_suggests_the_close_key():
    c = _local()
    with pytest.raises(configs.ConfigError, match="did you mean 'base_lr'"):
        configs.apply_override(c, "optim.base_lrr=1")
    with pytest.raises(
        configs.ConfigError, match="'evalz' is not a key of config; did you mean 'evals'"
    ):
        configs.apply_override(c, "evalz.knn.k=1")
    configs.apply_override(c, "evals.knn.every_steps=100")
    assert c.evals.knn.every_steps == 100


def test_apply_override_types_a_placeholder_and_reads_a_bool():
    """An eval job's typed placeholder (None until set) takes its type only, as one `ConfigError`;
    a bool field takes `true` / `false` as the command line writes them."""
    c = configs.load(os.path.join(ROOT, "configs/knn.py"), ["data.image_size=32"])
    assert c.data.image_size == 32
    with pytest.raises(
        configs.ConfigError, match=r"image_size='abc' has type str; .* int \(None\)"
    ):
        configs.apply_override(
            configs.load(os.path.join(ROOT, "configs/knn.py")), "data.image_size=abc"
        )
    c = _local()
    configs.apply_override(c, "data.cache=true")
    assert c.data.cache is True
    configs.apply_override(c, "data.cache=False")
    assert c.data.cache is False
    with pytest.raises(configs.ConfigError, match="cache='yes' has type str; the field holds bool"):
        configs.apply_override(c, "data.cache=yes")


def test_overrides_named_in_the_readme_and_docs_are_keys():
    """`--config.a.b=` in the README, the docs and the config docstrings names a key of a pretraining
    config (JCL's or IRing's) or, `init`, of the evaluation jobs."""
    texts = _texts_naming_configs()
    keys = {k for t in texts for k in re.findall(r"--config\.([a-z_][a-z0-9_.]*[a-z0-9_])=", t)}
    # a queue method and a bank method with the ring's keys, and the evaluation jobs
    pretrain = [
        configs.load(os.path.join(ROOT, f"configs/{name}.py"))
        for name in ("jcl_fashion_mnist", "iring_fashion_mnist")
    ]
    jobs = [configs.load(os.path.join(ROOT, f"configs/{j}.py")) for j in ("knn", "linear_probe")]
    assert "evals.probe_table.num_train" in keys
    for key in sorted(keys - {"a.b"}):
        for c in (*pretrain, *jobs):
            node = c
            for part in key.split("."):
                node = node.get(part) if isinstance(node, ml_collections.ConfigDict) else None
            if node is not None or key == "init":  # the eval jobs' placeholder (None)
                break
        else:
            raise AssertionError(f"--config.{key}= is not a key of the configs")


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("configs/mocov2_cifar10.py:runlocal", True),
        ("configs/x.py:keys=8,runlocal", True),
        ("configs/x.py:runlocal=False", True),  # the flag's name: the file decides
        ("configs/x.py:keys=8", False),
        ("configs/x.py", False),
        ("configs/runlocal.py", False),
    ],
)
def test_runlocal_is_read_from_the_config_argument(spec, expected):
    assert configs.runlocal_requested(spec) is expected


def test_runlocal_says_what_data_it_trains_on():
    """`:runlocal` of a CIFAR config trains on Fashion-MNIST: the command line says so."""
    note = configs.describe_runlocal(configs.load("configs/mocov2_cifar10.py:runlocal"), 60_000)
    assert note.startswith(
        ":runlocal trains on fashion_mnist (the first 256 training images, grey repeated over 3 "
        "channels); for a config of another dataset this is a stand-in"
    )
    note = configs.describe_runlocal(configs.load("configs/cmc_stl10.py:runlocal"), 60_000)
    assert note.startswith(
        ":runlocal trains on color_fashion_mnist (the first 256 training images)"
    )
    # a split smaller than the subset: what there is (an image folder of 79 images)
    note = configs.describe_runlocal(configs.load("configs/mocov2_cifar10.py:runlocal"), 79)
    assert note.startswith(":runlocal trains on fashion_mnist (the first 79 training images")


def test_a_bad_data_name_under_runlocal_is_the_one_line_said(tmp_path):
    """A mistyped data set with `:runlocal`: the validation error alone, no ':runlocal trains on
    fashion_mnst' line before it, and no workdir."""
    import subprocess
    import sys

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ssl_jax.main",
            "--config=configs/mocov2_fashion_mnist.py:runlocal",
            f"--workdir={tmp_path / 'run'}",
            "--config.data.name=fashion_mnst",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "fashion_mnst" in result.stderr and "runlocal trains on" not in result.stdout
    assert [line for line in result.stderr.splitlines() if line.strip()][0].startswith("error: ")
    assert not (tmp_path / "run").exists()
