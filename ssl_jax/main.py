"""Command line: `python -m ssl_jax.main --config=configs/X.py[:runlocal] --workdir=DIR [--config.a.b=v]`.

The config is `configs.load(PATH[:ARG], overrides)`, then `validation.validate`, once: a mistake of
the command line (a config file that does not exist, an unknown `:arg` or key, a value of the wrong
type or out of range, the method's `method_config` and the evaluators' keys included) is their one
`error:` line, exit status 2, before anything compiles; the job's entry takes validate's result and
checks nothing again. The checks that need the data (a batch larger than the split) end the same
way. The job is `config.job`'s: 'pretrain' (its evaluators run inside the loop per `config.evals`;
after a completed pretraining whose probe table ran, the pictures are written), 'linear_probe'
(`configs/linear_probe.py`) or 'knn' (`configs/knn.py`). All logic lives in importable modules.

Stop requests: SIGTERM/SIGINT on any process → every process saves the checkpoint of the same step
and exits at once (no evaluator, no pictures) with `--stop_exit_code` (default 0: the run is
resumable, not failed; schedulers that requeue on preemption, e.g. SLURM's `--requeue`, do not need
a failure code; set e.g. 143 where a restart policy restarts only failed containers).

Several processes (one per host): `SSL_JAX_COORDINATOR` selects `jax.distributed.initialize()`'s
arguments: 'slurm' and 'tpu' (read from the launcher's environment), 'auto' (jax's detection) or
`HOST:PORT` of process 0's coordinator with `SSL_JAX_NUM_PROCESSES` and `SSL_JAX_PROCESS_ID`
(`launch/local_2proc.sh`); see `ssl_jax/parallel/distributed.py`. Each process prints the call.
"""

from __future__ import annotations

import os
import signal

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags  # noqa: E402

from ssl_jax import configs  # noqa: E402
from ssl_jax.output import progress
from ssl_jax.parallel import distributed

FLAGS = flags.FLAGS
OVERRIDE = "--config."  # `--config.a.b=v`: a field of the config, applied by `configs.load`
flags.DEFINE_string("config", None, "Config file, path[:arg]; its fields: --config.a.b=value.")
flags.DEFINE_string("workdir", None, "Directory for checkpoints, metrics and pictures.")
flags.DEFINE_integer(
    "stop_exit_code", 0, "Exit code after a SIGTERM/SIGINT stop with its checkpoint saved."
)
flags.mark_flags_as_required(["config", "workdir"])


def parse_flags(argv: list[str]):
    """absl's flags, then the config they name with its `--config.a.b=v` overrides (what `main`
    gets); a mistake in either is one `error:` line and exit status 2, not a traceback."""
    try:
        FLAGS([a for a in argv if not a.startswith(OVERRIDE)])
        overrides = [a[len(OVERRIDE) :] for a in argv if a.startswith(OVERRIDE)]
        return configs.load(FLAGS.config, overrides).lock()  # as ml_collections' flag locks it
    except flags.Error as e:
        progress.user_error(str(e).strip().splitlines()[0])
    except configs.ConfigError as e:
        progress.user_error(e)


def main(config) -> None:
    """Runs `config.job` (the config `parse_flags` loaded)."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not ignored (nohup, `&`)
        signal.signal(signal.SIGINT, progress.interrupt)
    distributed.initialize(os.environ)  # first: a dry run exits here, before the heavy imports
    # TensorFlow's start-up lines and orbax / clu INFO logs only with absl's --verbosity
    progress.quiet_logs(verbose=FLAGS["verbosity"].present > 0)

    import jax

    from ssl_jax import run_control, train, validation
    from ssl_jax.checkpoint import CheckpointError
    from ssl_jax.data.datasets import DataError, num_examples
    from ssl_jax.evaluate import knn, linear_probe, pictures
    from ssl_jax.output import writers

    try:
        # every check of the config, once, before data and compilation; the job gets the proof
        # (`Validated`) and checks nothing again
        validated = validation.validate(
            config, num_devices=jax.device_count(), num_processes=jax.process_count()
        )
        if config.job == "pretrain":
            if configs.runlocal_requested(FLAGS.config):
                num_train = num_examples(config.data, config.data.train_split)
                progress.say(configs.describe_runlocal(config, num_train))
            try:
                train.train_and_evaluate(config, FLAGS.workdir, validated=validated)
            except run_control.StopRequested as stop:  # checkpoint saved: exit in the grace time
                print(f"{stop}", flush=True)
                progress.exit_now(FLAGS.stop_exit_code)
            paths = pictures.after_pretraining(config, FLAGS.workdir)
            writers.log_pictures(FLAGS.workdir, config, paths)
        else:
            job = {"linear_probe": linear_probe.run, "knn": knn.run}[config.job]
            job(config, FLAGS.workdir, validated=validated)
    except (configs.ConfigError, DataError, CheckpointError, train.TrainingError) as e:
        progress.user_error(e)
    except KeyboardInterrupt:
        say_interrupted(FLAGS.workdir)
        progress.exit_now(130)  # 128 + SIGINT, as a shell reports it
    progress.exit_now(0)  # everything is written: skip the teardown (seconds of TensorFlow's)


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


if __name__ == "__main__":
    try:
        app.run(main, flags_parser=parse_flags)
    except KeyboardInterrupt:  # before the job started (imports, flags)
        say_interrupted(None)
        progress.exit_now(130)
