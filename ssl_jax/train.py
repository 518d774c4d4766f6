"""The pretraining loop: mesh + state + jitted step + data + checkpoints + metric writers.

The one file that wires the pieces; nothing imports it but `main`. `train_and_evaluate` is importable
from notebooks and tests.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import time
from collections.abc import Callable

import jax
import ml_collections
import optax
from absl import logging

from ssl_jax import checkpoint, optim, run_control, validation
from ssl_jax.config_checks import Validated
from ssl_jax.data.train_input import TrainInput
from ssl_jax.evaluate.encoder import RowEmbedder
from ssl_jax.evaluate.evaluators import build_evaluators
from ssl_jax.evaluate.run_features import eval_context
from ssl_jax.methods import METHODS
from ssl_jax.methods.common import StepContext, StepInput
from ssl_jax.models import compute_dtype
from ssl_jax.output import progress
from ssl_jax.output.writers import create_writer
from ssl_jax.parallel import sharding
from ssl_jax.state import TrainState, same_dtypes, state_initializer, state_shardings


class TrainingError(RuntimeError):
    """The run cannot continue (non-finite loss, ...); the message says what happened and what was kept."""


@dataclasses.dataclass
class Experiment:
    """Everything static about a run, built (and validated) before any data is read or code compiled."""

    config: ml_collections.ConfigDict
    mesh: jax.sharding.Mesh
    method: object
    ctx: StepContext
    tx: optax.GradientTransformation
    lr_schedule: optax.Schedule
    ema_schedule: object
    sample_input: jax.ShapeDtypeStruct  # two views of view 0 in the compute dtype
    init_state: Callable[[jax.Array], TrainState]  # a fresh state from a key (compiled once)
    input: TrainInput  # the batches and the views (`data/train_input.py`)
    validated: Validated  # the config's checks passed (`validation.validate`), e.g. `evals`


def build_experiment(
    config: ml_collections.ConfigDict, mesh=None, *, validated: Validated | None = None
) -> Experiment:
    """Build model, optimiser and method context from a valid config. No pixel, no compilation.

    The config is checked once per run: `validated` is `validation.validate`'s proof for this config
    (`main` validates first, for every job, and passes it down); None — a library call (tests,
    experiments, benchmarks) — validates here, so such a caller still gets the `ConfigError`. The
    checks that need the split's size follow: the method's `check_config` (banks the size of the
    split, queues divisible by the batch) and, in `TrainInput.prepare`, a batch larger than the
    split."""
    mesh = sharding.make_mesh() if mesh is None else mesh
    if validated is None:
        validated = validation.validate(
            config, num_devices=mesh.size, num_processes=jax.process_count()
        )
    else:
        validated.require(config, num_devices=mesh.size)
    method = METHODS[config.method]
    hp = validated.hparams
    inputs = TrainInput.build(config, mesh)  # reads the split's size, no pixel
    steps_per_epoch = inputs.steps_per_epoch
    total_steps = (
        config.total_steps
        if config.total_steps > 0
        else max(1, int(math.ceil(config.num_epochs * steps_per_epoch)))
    )
    model = method.build_model(config)
    ctx = StepContext(
        model=model,
        mesh=mesh,
        config=config,
        hp=hp,
        num_train_examples=inputs.num_train,
        total_steps=total_steps,
        steps_per_epoch=steps_per_epoch,
    )
    method.check_config(ctx)
    tx, lr_schedule = optim.make_optimizer(
        config.optim,
        total_steps=total_steps,
        steps_per_epoch=steps_per_epoch,
        global_batch_size=config.global_batch_size,
    )
    ema_schedule = optim.ema_momentum_schedule(config.ema, total_steps=total_steps)
    sample_input = jax.ShapeDtypeStruct(
        (2, *inputs.view_shape(0)), compute_dtype(config.model.dtype)
    )
    return Experiment(
        config,
        mesh,
        method,
        ctx,
        tx,
        lr_schedule,
        ema_schedule,
        sample_input,
        state_initializer(tx=tx, method=method, ctx=ctx, sample_input=sample_input),
        inputs,
        validated,
    )


def step_input(exp: Experiment, state: TrainState, batch) -> StepInput:
    """What the step feeds `method.loss_fn` at `state.step`: the views prepared on device, the loss
    rng, the buffers and the target (EMA'd first for methods with `EMA_BEFORE_KEYS`). Tests call it
    to run a method's forward alone, exactly as the step does."""
    method = exp.method
    view_rng, loss_rng = jax.random.split(jax.random.fold_in(state.rng, state.step))
    views = exp.input.views(batch, view_rng, exp.sample_input.dtype)
    target = None
    if method.USES_TARGET:
        params = state.target_params
        if method.EMA_BEFORE_KEYS:
            params = optim.ema_update(params, state.params, exp.ema_schedule(state.step))
        target = {"params": params, "batch_stats": state.target_batch_stats}
    return StepInput(
        step=state.step,
        rng=loss_rng,
        views=tuple(views),
        batch=batch,
        buffers=state.buffers,
        target=target,
    )


def make_train_step(exp: Experiment):
    """The pure step (state, batch) → (state, metrics); jitted with the state donated.

    The order of operations is the method protocol's (`methods/common.py`): EMA before the keys or
    after the optimiser, the loss and its gradient, the optimiser, the buffer update."""
    method, ctx, tx = exp.method, exp.ctx, exp.tx
    uses_target = method.USES_TARGET

    def train_step(state: TrainState, batch):
        momentum = exp.ema_schedule(state.step)
        inp = step_input(exp, state, batch)
        target_params = inp.target["params"] if uses_target else state.target_params

        def loss_fn(params):
            return method.loss_fn(ctx, params, state.batch_stats, inp)

        (loss, out), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        if uses_target and not method.EMA_BEFORE_KEYS:
            target_params = optim.ema_update(target_params, params, momentum)
        buffers = same_dtypes(method.update_buffers(ctx, inp, out.updates), state.buffers)
        metrics = {f"train/{k}": v for k, v in out.metrics.items()}
        metrics.update({f"train/{k}": v for k, v in method.buffer_metrics(ctx, buffers).items()})
        metrics.update(
            {
                "train/loss": loss,
                "train/lr": exp.lr_schedule(state.step),
                "train/grad_norm": optax.global_norm(grads),
            }
        )
        if uses_target:
            metrics["train/ema_momentum"] = momentum
        new_state = state.replace(
            step=state.step + 1,
            params=params,
            batch_stats=out.batch_stats,
            opt_state=opt_state,
            target_params=target_params,
            target_batch_stats=out.target_batch_stats if uses_target else state.target_batch_stats,
            buffers=buffers,
        )
        return new_state, metrics

    return train_step


def jit_train_step(exp: Experiment, state: TrainState):
    shardings = jax.tree.map(lambda x: x.sharding, state)
    return jax.jit(
        make_train_step(exp),
        in_shardings=(shardings, exp.input.shardings()),
        out_shardings=(shardings, sharding.replicated(exp.mesh)),
        donate_argnums=(0,),
    )


def abstract_state(exp: Experiment) -> TrainState:
    """The state's shapes, dtypes and shardings (`jax.ShapeDtypeStruct`s), nothing allocated: what a
    restore fills and what `jit_train_step(...).lower` needs."""
    abstract = jax.eval_shape(exp.init_state, jax.random.PRNGKey(exp.config.seed))
    shardings = state_shardings(abstract, exp.mesh, exp.method.buffer_specs(exp.ctx))
    return jax.tree.map(
        lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), abstract, shardings
    )


def init_or_restore(exp: Experiment, ckpt: checkpoint.Checkpointer | None) -> TrainState:
    """This workdir's latest checkpoint if there is one (said in the log), else a fresh state.

    A fresh state is not yet prepared: `prepare_fresh_state` runs the method's `prepare_buffers`."""
    latest = ckpt.latest_step() if ckpt is not None else None
    if latest is None:
        return exp.init_state(jax.random.PRNGKey(exp.config.seed))
    with progress.phase("restoring the newest checkpoint"):  # which: said by the next line
        state, step = ckpt.restore_intact(abstract_state(exp))  # a damaged one is set aside
    logging.info("Resuming from the checkpoint at step %d in %s", step, ckpt.directory)
    print(f"Resuming from the checkpoint at step {step} in {ckpt.directory}", flush=True)
    return state


def say_config_changes(exp: Experiment, workdir: str, step: int) -> None:
    """One line when a run resumes with a config that differs from the one it started with
    (`config.json`): the changed values, and the learning rate the step after the checkpoint now
    gets — a new `total_steps` re-stretches the schedules from here on. Allowed (extending a run is
    a normal thing to do), but never silent."""
    changes = checkpoint.config_changes(workdir, exp.config)
    if not changes:
        return
    shown = "; ".join(changes[:6]) + (f"; and {len(changes) - 6} more" if len(changes) > 6 else "")
    lr = float(exp.lr_schedule(step))
    progress.say(
        f"resuming step {step} with a config that differs from the run's {checkpoint.CONFIG_FILE}: "
        f"{shown}. The schedules follow the new values from here (lr {lr:.4g} at step {step})."
    )


def train_embedder(exp: Experiment) -> RowEmbedder:
    """A `RowEmbedder` over the train split, for the methods' buffer hooks."""
    return RowEmbedder(
        exp.config,
        exp.mesh,
        num_rows=exp.ctx.num_train_examples,
        batch_size=exp.config.global_batch_size // jax.process_count(),
    )


def prepare_fresh_state(exp: Experiment, state: TrainState) -> TrainState:
    """The method's `prepare_buffers` hook, once before step 0 of a new run (never on resume: the
    restored state holds its result). It gets a `RowEmbedder` over the train split."""
    return _buffer_dtypes_of(state, exp.method.prepare_buffers(exp.ctx, state, train_embedder(exp)))


def _buffer_dtypes_of(old: TrainState, new: TrainState) -> TrainState:
    """`new` with its buffers cast back to `old`'s dtypes (a host hook may return float32 rows of a
    bfloat16 bank)."""
    return new.replace(buffers=same_dtypes(new.buffers, old.buffers))


def refresh_every_steps(exp: Experiment) -> int:
    """Steps between two runs of a method's optional host hook `refresh_buffers(ctx, state,
    embedder) -> state` (0: never), e.g. InterCLR's offline labels: the loop runs it after the step
    whose `state.step` is a multiple, before that step's checkpoint, so a resume never repeats it;
    never after the run's last step, whose buffers no step reads."""
    if not hasattr(exp.method, "refresh_buffers"):
        return 0
    return exp.method.refresh_every_steps(exp.ctx)


def refresh_state(exp: Experiment, state: TrainState, embedder: RowEmbedder) -> TrainState:
    return _buffer_dtypes_of(state, exp.method.refresh_buffers(exp.ctx, state, embedder))


def _run_evaluators(evaluators, state: TrainState, step: int, writer) -> None:
    for evaluator in evaluators:
        with jax.transfer_guard("allow"), progress.running(f"step {step}: evals.{evaluator.name}"):
            writer.write_scalars(step, evaluator.run(state, step))
        writer.flush()


def _finish_saves(ckpt: checkpoint.Checkpointer) -> None:
    """Waits for an in-flight save; a failure to finish it is logged, not raised (the exception
    that stopped the loop is the one to report)."""
    try:
        ckpt.wait()
    except Exception:  # noqa: BLE001
        logging.exception("the checkpoint being saved when the run stopped could not be finished")


PREFETCH_BATCHES = 2  # global batches transferred ahead of the running step
# The loop's own transfers are explicit (prefetched global batches, `jax.device_get` of metrics and
# the stop vote); checkpoint saves and evaluators run under 'allow'. Tests set 'disallow' to prove
# that the steps make no implicit host<->device transfer; 'log' reports them.
LOOP_TRANSFER_GUARD = "allow"


def train_and_evaluate(
    config: ml_collections.ConfigDict,
    workdir: str,
    *,
    stop_after_steps: int | None = None,
    validated: Validated | None = None,
) -> TrainState:
    """Pretrain per `config` in `workdir`, resuming from its latest checkpoint; run the evaluators of
    `config.evals` on their schedule. Returns the final state. `validated`: `validation.validate`'s
    result for `config` (`main` passes it), None to validate here (`build_experiment`).

    `stop_after_steps` ends this process early (with a checkpoint) without changing the schedules — the
    same as a preemption, used by the exact-resume test. A SIGTERM/SIGINT (on any process) saves the
    checkpoint of a step every process agrees on and raises `StopRequested` (no evaluator runs).
    """
    exp = build_experiment(config, validated=validated)
    # data that cannot be had, or a batch larger than the split, ends here, before the workdir exists
    exp.input.prepare()
    fresh_workdir = not os.path.isdir(workdir)
    os.makedirs(workdir, exist_ok=True)
    try:  # up to the first step: an error here leaves no folder behind in a new workdir
        checkpoint.check_same_model(workdir, config)
        ckpt = checkpoint.Checkpointer(workdir, keep=config.keep_checkpoints)
        # A resumed run starts from its newest intact checkpoint (restoring compiles nothing), and its
        # data from that step.
        state = init_or_restore(exp, ckpt) if ckpt.latest_step() is not None else None
        resume_step = 0 if state is None else int(jax.device_get(state.step))
        if state is not None:
            say_config_changes(exp, workdir, resume_step)
        # The data comes first: a missing or corrupt dataset is reported before anything compiles.
        batches = exp.input.batches(resume_step, prefetch=PREFETCH_BATCHES)
        # the evaluators' entries as validation checked them (nothing is checked again)
        evaluators = build_evaluators(config, eval_context(exp, workdir), exp.validated.evals)
        if state is None:
            with progress.phase(f"initialising {config.method}'s state"):  # a bank embeds the split
                state = prepare_fresh_state(exp, init_or_restore(exp, None))
        if jax.process_index() == 0:
            checkpoint.write_config(workdir, config)
    except BaseException:
        if fresh_workdir:  # nothing of value in it yet: no step has run
            shutil.rmtree(workdir, ignore_errors=True)
        raise
    writer = create_writer(workdir, config)
    start_step = int(jax.device_get(state.step))
    total = exp.ctx.total_steps
    logging.info(
        "%s on %s: %d steps (%d per epoch), global batch %d, %d devices",
        config.method,
        config.data.name,
        total,
        exp.ctx.steps_per_epoch,
        config.global_batch_size,
        exp.mesh.size,
    )
    step_fn = jit_train_step(exp, state)
    refresh_every = refresh_every_steps(exp)
    embedder = train_embedder(exp) if refresh_every else None
    end_step = total if stop_after_steps is None else min(total, start_step + stop_after_steps)
    window: list[dict] = []
    last_good_step = start_step
    tick, tick_step = time.time(), start_step
    compiled = progress.start("compiling the train step (and running the first)")
    try:
        with run_control.StopVote(exp.mesh) as stop, jax.transfer_guard(LOOP_TRANSFER_GUARD):
            for step in range(start_step, end_step):
                state, metrics = step_fn(state, next(batches))
                window.append(metrics)
                done = step + 1
                if step == start_step:  # img/s and ETA without the compilation time
                    jax.block_until_ready(metrics)
                    compiled()
                    tick, tick_step = time.time(), done
                if refresh_every and done % refresh_every == 0 and done < total:
                    with (
                        jax.transfer_guard("allow"),
                        progress.phase(f"refreshing {config.method}'s buffers"),
                    ):
                        state = refresh_state(exp, state, embedder)
                is_last = done == end_step
                due = [e for e in evaluators if e.should_run(done, total)]
                log_due = done % config.log_every_steps == 0 or is_last
                save_due = done % config.checkpoint_every_steps == 0 or is_last
                # Every process reads the (agreed) stop request once per step: a signal that arrives
                # later is handled at the next step, never after this step's save decision.
                stopping = stop.poll(sync=bool(log_due or save_due or due))
                if log_due or save_due or stopping:
                    scalars, finite = run_control.mean_metrics(window)
                    window = []
                    if not finite:
                        ckpt.wait()
                        raise TrainingError(
                            f"non-finite loss between steps {last_good_step} and {done}; "
                            f"the run stopped and the last good checkpoint (step {ckpt.latest_step()}) "
                            f"is kept in {ckpt.directory}. Lower the learning rate or check the data."
                        )
                    last_good_step = done
                    elapsed = time.time() - tick
                    rate = (done - tick_step) * config.global_batch_size / max(elapsed, 1e-9)
                    speed = "compiled"  # the first step of a process: compilation, no rate yet
                    if done > tick_step:
                        scalars["train/img_per_sec"] = rate
                        eta = (total - done) * config.global_batch_size / max(rate, 1e-9)
                        speed = f"{rate:.1f} img/s | ETA {run_control.format_eta(eta)}"
                    writer.write_scalars(done, scalars)
                    print(
                        f"step {done}/{total} | loss {scalars['train/loss']:.4f} | {speed}",
                        flush=True,
                    )
                    tick, tick_step = time.time(), done
                if save_due or stopping:
                    with jax.transfer_guard("allow"):  # orbax copies to the host its own way
                        ckpt.save(state, force=True)
                if stopping:
                    ckpt.wait()
                    writer.flush()
                    print(f"{stopping}: saved the checkpoint at step {done}; exiting.", flush=True)
                    raise run_control.StopRequested(done, stopping)
                if due:
                    with stop.interruptible():
                        _run_evaluators(due, state, done, writer)
                    tick = time.time()
    except BaseException:
        # Whatever stopped the loop (bad input, a bug, an interrupt), a save in flight completes
        # before the exception leaves: the checkpoints written so far are never lost.
        _finish_saves(ckpt)
        writer.close()  # e.g. the W&B run, finished so that the resumed job continues it
        raise
    if start_step == total:  # resumed a finished run (e.g. stopped at its last step): final evals
        _run_evaluators([e for e in evaluators if e.should_run(total, total)], state, total, writer)
    ckpt.wait()
    writer.close()
    return state
