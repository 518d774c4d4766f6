"""Command line: `python -m ssl_jax.main --config=configs/X.py[:runlocal] --workdir=DIR [--config.a.b=v]`.

Picks the job from `config.job`: 'pretrain' (its evaluators, e.g. the default job's linear-probe
table, run inside the loop per `config.evals`; after a completed pretraining whose probe table ran,
the pictures are written), 'linear_probe' (`configs/linear_probe.py`) or 'knn' (`configs/knn.py`). All logic lives in
importable modules.

Stop requests: SIGTERM/SIGINT on any process → every process saves the checkpoint of the same step
and exits at once (no evaluator, no pictures) with `--stop_exit_code` (default 0: the run is
resumable, not failed; schedulers that requeue on preemption, e.g. SLURM's `--requeue`, do not need
a failure code; set e.g. 143 where a restart policy restarts only failed containers).

Several processes (one per host): `SSL_JAX_COORDINATOR` selects `jax.distributed.initialize()`'s
arguments: 'slurm' and 'tpu' (read from the launcher's environment), 'auto' (jax's detection) or
`HOST:PORT` of process 0's coordinator with `SSL_JAX_NUM_PROCESSES` and `SSL_JAX_PROCESS_ID`
(`launch/local_2proc.sh`); see `ssl_jax/distributed.py`. Each process prints the call. On CPU the
cross-process collectives use gloo.
"""

from __future__ import annotations

import os
import signal
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402
from ml_collections import config_flags  # noqa: E402

from ssl_jax import progress  # noqa: E402

FLAGS = flags.FLAGS
config_flags.DEFINE_config_file("config", None, "ml_collections config file (path[:arg]).")
flags.DEFINE_string("workdir", None, "Directory for checkpoints, metrics and pictures.")
flags.DEFINE_integer(
    "stop_exit_code", 0, "Exit code after a SIGTERM/SIGINT stop with its checkpoint saved."
)
flags.mark_flags_as_required(["config", "workdir"])


def initialize_distributed(environ=os.environ) -> None:
    """`jax.distributed.initialize` per `SSL_JAX_COORDINATOR` (`ssl_jax/distributed.py`); nothing
    when it is unset (one process)."""
    from ssl_jax import distributed

    distributed.initialize(environ)


def _ran_probe_table(config) -> bool:
    """The pictures follow a completed pretraining whose probe table ran (at its last step)."""
    evals = config.get("evals") or {}
    return any(
        e.get("type") == "probe_table" and e.get("every_steps", 0) >= 0 for e in evals.values()
    )


def exit_now(code: int) -> None:
    """Exit at the end of a job (everything written) or after a stop request (its checkpoint
    written): one process skips the interpreter's teardown (TensorFlow's and XLA's: seconds of
    silence that a Ctrl-C turns into a traceback, and that a scheduler's grace period may not
    have); several processes exit normally, so `jax.distributed` shuts down in step."""
    jax = sys.modules.get("jax")  # not imported: one process

    sys.stdout.flush()
    sys.stderr.flush()
    if jax is None or jax.process_count() == 1:
        os._exit(code)
    sys.exit(code)


def main(argv) -> None:
    del argv
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not ignored (nohup, `&`)
        signal.signal(signal.SIGINT, progress.interrupt)
    initialize_distributed()  # first: a dry run exits here, before the heavy imports
    # TensorFlow's start-up lines and orbax / clu INFO logs only with absl's --verbosity
    progress.quiet_logs(verbose=FLAGS["verbosity"].present > 0)

    from ssl_jax import run_control, train
    from ssl_jax.checkpoint import CheckpointError
    from ssl_jax.config_checks import ConfigError
    from ssl_jax.configs import describe_runlocal
    from ssl_jax.data.datasets import DataError
    from ssl_jax.evaluate import knn, linear_probe, pictures

    config = FLAGS.config
    try:
        if config.job == "pretrain" and _runlocal_requested(sys.argv):
            import jax

            from ssl_jax import validation
            from ssl_jax.data import datasets

            validation.validate(config, num_devices=jax.device_count())  # a bad key says so first
            num_train = datasets.num_examples(config.data, config.data.train_split)
            progress.say(describe_runlocal(config, num_train))
        if config.job == "pretrain":
            try:
                train.train_and_evaluate(config, FLAGS.workdir)
            except (
                run_control.StopRequested
            ) as stop:  # checkpoint saved: exit now, inside the grace time
                print(f"{stop}", flush=True)
                exit_now(FLAGS.stop_exit_code)
            if _ran_probe_table(config):  # a completed default-job-style run: its pictures
                # on every process (the t-SNE features are sharded)
                pictures.write_all(FLAGS.workdir, num_points=pictures.tsne_points(config))
        elif config.job == "linear_probe":
            linear_probe.run(config, FLAGS.workdir)
        elif config.job == "knn":
            knn.run(config, FLAGS.workdir)
        else:
            raise ConfigError(
                f"config.job={config.job!r} is not known; "
                "allowed: 'pretrain', 'linear_probe', 'knn'"
            )
    except (ConfigError, DataError, CheckpointError, train.TrainingError) as e:
        progress.user_error(e)
    except KeyboardInterrupt:
        say_interrupted(FLAGS.workdir)
        exit_now(130)  # 128 + SIGINT, as a shell reports it; no interpreter teardown to interrupt
    exit_now(0)  # everything is written: skip the teardown (seconds of TensorFlow's, silent)


def say_interrupted(workdir: str | None) -> None:
    """The stop message of a Ctrl-C outside the training steps (inside them it stops after the
    step and saves, `train.StopRequested`): what it interrupted and what is kept."""
    from ssl_jax import checkpoint

    where = progress.current()
    step = checkpoint.newest_step(workdir) if workdir and os.path.isdir(workdir) else None
    kept = (
        "no checkpoint was written"
        if step is None
        else f"the checkpoint at step {step} is kept in {checkpoint.checkpoint_dir(workdir)}; "
        "the same command resumes from it"
    )
    progress.say(f"interrupted (Ctrl-C){f' during {where!r}' if where else ''}: {kept}.")


def _config_spec(argv: list[str]) -> str | None:
    """The `--config=PATH[:ARG]` value of a command line (also `--config PATH[:ARG]`)."""
    args = argv[1:]
    spec = next((a.partition("=")[2] for a in args if a.startswith("--config=")), None)
    if spec is None and "--config" in args[:-1]:
        spec = args[args.index("--config") + 1]
    return spec


def _runlocal_requested(argv: list[str]) -> bool:
    """Whether the config file's argument names `runlocal` (`configs/X.py:runlocal,keys=8`)."""
    spec = _config_spec(argv) or ""
    arg = spec.rpartition(":")[2] if ":" in spec else ""
    return "runlocal" in [part.split("=")[0].strip() for part in arg.split(",")]


def _flag_error(argv: list[str], error: Exception) -> str | None:
    """One line for a command line that absl / ml_collections could not parse: the `ConfigError` of
    the first `--config.a.b=v` override that `configs.apply_override` rejects (unknown key, wrong
    type), of the config file's `:arg`, or the flags' own first line; None for an error that is not
    the command line's (a bug in a config file keeps its traceback)."""
    from ssl_jax import configs

    if isinstance(error, configs.ConfigError):
        return str(error)
    args = argv[1:]
    spec = _config_spec(argv)
    if spec:
        try:
            config = configs.load(spec)
            for a in args:
                if a.startswith("--config.") and "=" in a:
                    configs.apply_override(config, a[len("--config.") :])
        except configs.ConfigError as e:
            return str(e)
    if isinstance(error, flags.Error):
        return str(error).strip().splitlines()[0]
    return None


def parse_flags(argv: list[str]) -> list[str]:
    """absl's flag parsing, with a command-line mistake (a config file that does not exist, an
    unknown `--config.` key, a value of the wrong type, an unknown `:arg`) reported as one `error:` line and exit status 2 — as the
    validation errors — instead of a traceback."""
    try:
        rest = FLAGS(argv)
        hasattr(FLAGS.config, "job")  # the file loads lazily: a missing one raises OSError here
        return rest
    except (flags.Error, KeyError, AttributeError, TypeError, ValueError, OSError) as e:
        message = _flag_error(argv, e)
        if message is None:
            raise
        progress.user_error(message)


if __name__ == "__main__":
    try:
        app.run(main, flags_parser=parse_flags)
    except KeyboardInterrupt:  # before the job started (imports, flags)
        say_interrupted(None)
        exit_now(130)
