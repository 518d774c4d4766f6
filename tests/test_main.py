"""The command line: runlocal runs of the MoCo v2 / IR configs, SIGTERM, clear errors for missing data."""

import glob
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.helpers import error_lines, run_main
from tests.process_env import xla_flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _config_file(tmp_path, base: str, **evals) -> str:
    """A config file: `configs/<base>` (`path[:arg]`) with `config.evals` replaced by `evals`."""
    path = tmp_path / "test_config.py"
    path.write_text(
        "import ml_collections\n"
        "from ssl_jax import configs\n\n"
        "def get_config(arg=None):\n"
        f"    c = configs.load({os.path.join(ROOT, 'configs', base)!r})\n"
        f"    c.evals = ml_collections.ConfigDict({evals!r})\n"
        "    return c\n"
    )
    return str(path)


def _main(*args, **kwargs):
    env = dict(os.environ, XLA_FLAGS=xla_flags(2), TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.Popen(
        [sys.executable, "-m", "ssl_jax.main", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **kwargs,
    )


@pytest.mark.slow
@pytest.mark.parametrize("config", ["ir_cifar10.py:runlocal", "mocov2_fashion_mnist.py:runlocal"])
def test_runlocal_config_runs_from_the_command_line(tmp_path, config):
    proc = _main(
        f"--config=configs/{config}",
        f"--workdir={tmp_path}",
        "--config.total_steps=2",
        "--config.evals.probe_table.every_steps=-1",
        "--config.evals.knn.every_steps=-1",
    )
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out
    assert "step 2/2" in out
    assert out.startswith(":runlocal trains on fashion_mnist (the first 256 training images"), out
    # quiet by default: no TensorFlow start-up lines, no orbax / clu INFO lines
    assert "oneDNN" not in out and "InitializeLog" not in out, out
    assert "checkpoint_manager.py" not in out and "] " not in out.split("step 2/2")[0], out
    assert os.path.exists(tmp_path / "metrics.jsonl")
    assert glob.glob(str(tmp_path / "checkpoints" / "2"))


@pytest.mark.slow
def test_sigterm_saves_a_checkpoint_and_exits(tmp_path):
    """SIGTERM: the checkpoint of the current step, then exit 0 at once: no probe table (an
    evaluator at the last step) and no pictures for a half-trained encoder."""
    table = dict(type="probe_table", every_steps=0, num_train=64, batch_size=64)
    workdir = tmp_path / "run"
    proc = _main(
        f"--config={_config_file(tmp_path, 'mocov2_fashion_mnist.py:runlocal', table=table)}",
        f"--workdir={workdir}",
        "--config.total_steps=100000",
        "--config.log_every_steps=1",
        "--config.checkpoint_every_steps=100000",
    )
    lines = []
    deadline = time.time() + 900
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("step 2/"):
            proc.send_signal(signal.SIGTERM)
            break
        assert time.time() < deadline, "".join(lines)
    for line in proc.stdout:
        lines.append(line)
        if "; exiting." in line:
            saved = time.time()
            break
    # the rest through the same reader (communicate(timeout=...) reads the pipe past its buffer)
    out = "".join(lines) + proc.stdout.read()
    proc.wait(timeout=300)
    # gone within a second of its save (the interpreter's teardown of TensorFlow and XLA took
    # seconds, which a scheduler's grace period may not leave)
    exit_seconds = time.time() - saved
    print(f"exited {exit_seconds:.2f} s after the save")
    assert exit_seconds < 1.0, out
    assert proc.returncode == 0, out
    assert "SIGTERM: saved the checkpoint" in out and "rerun to resume" in out
    steps = [int(os.path.basename(p)) for p in glob.glob(str(workdir / "checkpoints" / "[0-9]*"))]
    assert len(steps) == 1 and 2 <= steps[0] < 100000
    assert "Linear probe" not in out and "pictures:" not in out
    assert not (workdir / "probe_table.txt").exists()
    assert not glob.glob(str(workdir / "*.png"))


@pytest.mark.slow
def test_ctrl_c_during_the_probe_table_stops_at_once_with_the_stop_message(tmp_path):
    """A Ctrl-C outside the training steps (here the probe table at the last step: minutes on a
    real run, no step to stop after) ends the job at once: one line naming the phase and the
    checkpoint kept, exit status 130, no traceback; the same command then resumes."""
    table = dict(type="probe_table", every_steps=0, num_train=64, batch_size=64)
    workdir = tmp_path / "run"
    args = (
        f"--config={_config_file(tmp_path, 'mocov2_fashion_mnist.py:runlocal', table=table)}",
        f"--workdir={workdir}",
        "--config.total_steps=2",
    )
    # SIGINT as a terminal sends it (the test runner's own handler is not inherited)
    proc = _main(*args, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("  probe: pretrained"):
            proc.send_signal(signal.SIGINT)
            break
    out = "".join(lines) + proc.stdout.read()
    proc.wait(timeout=300)
    assert proc.returncode == 130, out
    last = out.strip().splitlines()[-1]
    assert last == (
        "interrupted (Ctrl-C) during 'step 2: evals.table': the checkpoint at step 2 is kept in "
        f"{workdir / 'checkpoints'}; the same command resumes from it."
    ), out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    assert not (workdir / "probe_table.txt").exists()


def test_missing_dataset_is_a_clear_error_before_compiling(tmp_path):
    proc = _main(
        "--config=configs/ir_fashion_mnist.py",
        f"--workdir={tmp_path}",
        f"--config.data.data_dir={tmp_path / 'nowhere'}",
    )
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 2, out
    assert "error:" in out and "dataset-fashion-mnist" in out


def test_bad_override_names_the_key(tmp_path):
    proc = _main(
        "--config=configs/mocov2_fashion_mnist.py",
        f"--workdir={tmp_path}",
        "--config.global_batch_size=101",
    )
    env_devices = 2
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 2, out
    assert "global_batch_size=101" in out and f"device count ({env_devices})" in out


@pytest.mark.slow
def test_default_job_prints_the_probe_table(tmp_path):
    """The default job's last part: the probe table evaluator (pretrained / random init / raw
    pixels) at the last step, then the pictures. On a generated 512 + 128 image Fashion-MNIST
    folder: the probe's test features and the t-SNE take 128 images, not 10k and 2000."""
    from tests.data.data_helpers import make_fashion_dir

    data_dir = make_fashion_dir(str(tmp_path / "fashion"), num_train=512, num_test=128)
    table = dict(type="probe_table", every_steps=0, num_train=500, batch_size=500)
    workdir = tmp_path / "run"
    proc = _main(
        f"--config={_config_file(tmp_path, 'sce_fashion_mnist.py:runlocal', table=table)}",
        f"--workdir={workdir}",
        f"--config.data.data_dir={data_dir}",
        "--config.total_steps=2",
    )
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out
    rows = {line.split("  ")[0]: line for line in out.splitlines()}
    for name in ("pretrained", "random init", "raw pixels"):
        assert name in rows and "%" in rows[name], out
    table = (workdir / "probe_table.txt").read_text()
    assert table.startswith("Linear probe: multinomial logistic regression")
    assert "raw pixels" in table and "train 500 (train)" in table and "kNN top-1" in table
    assert "test 128 (test)" in table
    from ssl_jax.output.writers import read_metrics

    probe = [r for r in read_metrics(str(workdir)) if "probe/top1" in r]
    assert [r["step"] for r in probe] == [2] and "probe/raw_pixels_top1" in probe[0]
    assert "probe/knn_top1" in probe[0]
    assert "pictures:" in out


def _run_main(*args):
    """`python -m ssl_jax.main ARGS` on 2 simulated devices, stdout and stderr apart."""
    return run_main(*args, devices=2)


@pytest.mark.parametrize(
    "arg, message",
    [
        (
            "--config.optim.base_lrr=1",
            "error: config.optim.base_lrr is not a key of the config; did you mean 'base_lr'?",
        ),
        (
            "--config.optim.base_lr=abc",
            "error: config.optim.base_lr='abc' has type str; the field holds float (0.06)",
        ),
        (
            "--config.optimm.base_lr=1",
            "error: config.optimm.base_lr: 'optimm' is not a key of config; did you mean 'optim'?",
        ),
        (
            "--config=configs/mocov2_fashion_mnist.py:runlocall",
            "error: config argument 'runlocall' is not known; allowed: 'runlocal'",
        ),
        (
            "--config=configs/no_such_config.py",
            "error: config file 'configs/no_such_config.py' does not exist",
        ),
        (
            "--config.optim.base_lr",  # no `=VALUE` (`--config.a.b VALUE` is not read either)
            "error: config.optim.base_lr has no value; an override is key=value "
            "(--config.optim.base_lr=VALUE)",
        ),
        ("--wrokdir=x", "error: Unknown command line flag 'wrokdir'. Did you mean: workdir ?"),
    ],
)
def test_command_line_mistakes_are_one_error_line(tmp_path, arg, message):
    """A config file that does not exist, a mistyped `--config.` key, a value of the wrong type, an
    unknown `:arg`, an override without its value or a mistyped flag: one `error:` line on stderr
    and exit status 2, as the validation errors, not a traceback from flag parsing."""
    config = "--config=configs/mocov2_fashion_mnist.py:runlocal"
    args = [arg] if arg.startswith("--config=") else [config, arg]
    result = _run_main(*args, f"--workdir={tmp_path / 'run'}")
    assert result.returncode == 2, result.stderr
    lines = error_lines(result.stderr)
    assert len(lines) == 1 and lines[0].startswith(message), result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists()


def test_a_negative_learning_rate_is_rejected_before_the_data_is_read(tmp_path):
    result = _run_main(
        "--config=configs/ir_fashion_mnist.py",
        f"--workdir={tmp_path}",
        f"--config.data.data_dir={tmp_path / 'nowhere'}",  # reading it would be a DataError
        "--config.optim.base_lr=-1",
    )
    assert result.returncode == 2, result.stderr
    lines = error_lines(result.stderr)
    # the message is optim.check_config's (its owner words it); one line naming the key
    assert len(lines) == 1 and lines[0].startswith("error: config.optim.base_lr=-1"), result.stderr


@pytest.mark.slow
def test_an_image_folder_without_a_test_folder(tmp_path):
    """Evaluators off: the run trains (no eval split is read). Evaluators on: one error line that
    names the split's config key, and no workdir left behind."""
    from tests.helpers import write_png_folder

    images = tmp_path / "images"
    write_png_folder(str(images), classes=2, per_class=40)
    common = [
        "--config=configs/mocov2_cifar10.py:runlocal",
        "--config.data.name=image_folder",
        f"--config.data.data_dir={images}",
    ]
    off = ["--config.evals.knn.every_steps=-1", "--config.evals.probe_table.every_steps=-1"]
    result = run_main(*common, *off, f"--workdir={tmp_path / 'off'}")
    assert result.returncode == 0, result.stderr[-2000:]
    assert "step 6/6" in result.stdout and "(the first 80 training images)" in result.stdout
    result = run_main(*common, f"--workdir={tmp_path / 'on'}")
    lines = error_lines(result.stderr)
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    assert "no folder" in lines[0] and "config.data" in lines[0] and "eval_test_split" in lines[0]
    assert not (tmp_path / "on").exists()


def _main_in_process(monkeypatch, capsys, *args):
    """`python -m ssl_jax.main ARGS`, run in this process (8 simulated devices): returns the exit
    status, the calls of `validation.validate`, whether `train.build_experiment` ran (the first
    step towards anything compiled) and stderr. The process is not ended (`exit_now` raises) and
    no signal handler is installed."""
    from absl import flags

    from ssl_jax import main, train, validation
    from ssl_jax.output import progress

    calls, built = [], []
    validate, build = validation.validate, train.build_experiment

    def counted(config, **kwargs):
        calls.append(config)
        return validate(config, **kwargs)

    def build_experiment(*a, **kw):
        built.append(True)
        return build(*a, **kw)

    def exit_now(code):
        raise SystemExit(code)

    monkeypatch.setattr(validation, "validate", counted)
    monkeypatch.setattr(train, "build_experiment", build_experiment)
    monkeypatch.setattr(progress, "exit_now", exit_now)
    monkeypatch.setattr(signal, "signal", lambda *_: None)
    capsys.readouterr()
    try:
        with pytest.raises(SystemExit) as stop:
            main.main(main.parse_flags(["ssl_jax.main", *args]))
    finally:
        flags.FLAGS.unparse_flags()
    return stop.value.code, calls, bool(built), capsys.readouterr().err


@pytest.mark.slow
def test_validate_runs_once_per_run(tmp_path, monkeypatch, capsys):
    """`main` validates once, before anything else, and the loop takes its result: one call of
    `validation.validate` for a whole pretraining run (one step, evaluators off)."""
    code, calls, built, err = _main_in_process(
        monkeypatch,
        capsys,
        f"--config={os.path.join(ROOT, 'tests', 'tiny_run_config.py')}",
        f"--workdir={tmp_path / 'run'}",
        "--config.total_steps=1",
    )
    assert code == 0, err
    assert len(calls) == 1 and built
    assert os.listdir(tmp_path / "run" / "checkpoints") == ["1"]


def test_a_bad_method_config_value_is_one_error_line_before_anything_is_built(
    tmp_path, monkeypatch, capsys
):
    """`config.method_config` is checked by `validation.validate` with the rest (not later by the
    loop): one `error:` line, exit status 2, before the experiment is built (nothing compiled, no
    data read, no workdir)."""
    code, calls, built, err = _main_in_process(
        monkeypatch,
        capsys,
        f"--config={os.path.join(ROOT, 'configs', 'mocov2_fashion_mnist.py')}:runlocal",
        f"--workdir={tmp_path / 'run'}",
        f"--config.data.data_dir={tmp_path / 'nowhere'}",  # reading it would be a DataError
        "--config.method_config.temperature=-1.0",
    )
    assert code == 2 and len(calls) == 1 and not built, err
    lines = error_lines(err)
    assert len(lines) == 1 and lines[0].startswith("error: config.method_config.temperature=-1.0")
    assert not (tmp_path / "run").exists()
