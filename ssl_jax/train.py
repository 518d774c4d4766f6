"""The pretraining loop: mesh + state + jitted step + data + checkpoints + metric writers.

The one file that wires the pieces; nothing imports it but `main`. `train_and_evaluate` is importable
from notebooks and tests.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import signal
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from absl import logging

from ssl_jax import checkpoint, configs, optim, sharding
from ssl_jax.data import datasets, device_augment, pipeline
from ssl_jax.evaluate import knn
from ssl_jax.evaluate.encoder import RowEmbedder, split_features, uint8_feature_fn
from ssl_jax.methods import METHODS
from ssl_jax.methods.common import StepContext, StepInput
from ssl_jax.state import TrainState, create_train_state, state_shardings
from ssl_jax.writers import create_writer


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
    sample_input: jax.ShapeDtypeStruct


def _compute_dtype(config):
    return jnp.bfloat16 if config.model.dtype == "bfloat16" else jnp.float32


def build_experiment(config: ml_collections.ConfigDict, mesh=None) -> Experiment:
    """Validate the config and build model, optimiser and method context. No data, no compilation."""
    mesh = sharding.make_mesh() if mesh is None else mesh
    configs.validate(config, num_devices=mesh.size)
    if config.method not in METHODS:
        raise configs.ConfigError(
            f"config.method={config.method!r} is not known; allowed values: {sorted(METHODS)}"
        )
    method = METHODS[config.method]
    hp = method.hparams(config)
    num_train = datasets.num_examples(config.data, config.data.train_split)
    if config.data.train_subset:
        num_train = min(num_train, config.data.train_subset)
    steps_per_epoch = max(1, num_train // config.global_batch_size)
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
        num_train_examples=num_train,
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
    size = _view_size(config, 0)
    sample_input = jax.ShapeDtypeStruct(
        (2, size, size, config.data.channels), _compute_dtype(config)
    )
    return Experiment(config, mesh, method, ctx, tx, lr_schedule, ema_schedule, sample_input)


def _view_size(config, view: int) -> int:
    """Output side of a view's recipe: the size of its last crop/resize op (else the eval size)."""
    size = config.data.image_size
    for op in config.data.recipes[config.data.views[view]]:
        if op["op"] in ("random_resized_crop", "resize", "center_crop"):
            size = op["size"]
    return size


def prepare_views(config, views, rng):
    """uint8 host crops → normalised compute-dtype arrays; with `data.device_ops` the colour ops of
    each view's recipe run here, on the device, with per-example keys."""
    dtype = _compute_dtype(config)
    out = []
    for i, view in enumerate(views):
        if config.data.device_ops:
            recipe = tuple(dict(op) for op in config.data.recipes[config.data.views[i]])
            out.append(
                device_augment.apply_recipe(
                    view,
                    recipe,
                    jax.random.fold_in(rng, i),
                    config.data.mean,
                    config.data.std,
                    dtype,
                )
            )
        else:
            out.append(device_augment.normalize(view, config.data.mean, config.data.std, dtype))
    return out


def make_train_step(exp: Experiment):
    """The pure step (state, batch) → (state, metrics); jitted with the state donated.

    The order of operations is the method protocol's (`methods/common.py`): EMA before the keys or
    after the optimiser, the loss and its gradient, the optimiser, the buffer update."""
    method, ctx, tx = exp.method, exp.ctx, exp.tx
    uses_target = method.USES_TARGET

    def train_step(state: TrainState, batch):
        rng = jax.random.fold_in(state.rng, state.step)
        view_rng, loss_rng = jax.random.split(rng)
        momentum = exp.ema_schedule(state.step)
        target_params = state.target_params
        if uses_target and method.EMA_BEFORE_KEYS:
            target_params = optim.ema_update(target_params, state.params, momentum)
        inp = StepInput(
            step=state.step,
            rng=loss_rng,
            views=tuple(prepare_views(exp.config, batch["views"], view_rng)),
            batch=batch,
            buffers=state.buffers,
            target={"params": target_params, "batch_stats": state.target_batch_stats}
            if uses_target
            else None,
        )

        def loss_fn(params):
            return method.loss_fn(ctx, params, state.batch_stats, inp)

        (loss, out), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        updates, opt_state = tx.update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        if uses_target and not method.EMA_BEFORE_KEYS:
            target_params = optim.ema_update(target_params, params, momentum)
        buffers = method.update_buffers(ctx, inp, out.updates)
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
    batch_sharding = sharding.batch_sharding(exp.mesh)
    return jax.jit(
        make_train_step(exp),
        in_shardings=(shardings, batch_sharding),
        out_shardings=(shardings, sharding.replicated(exp.mesh)),
        donate_argnums=(0,),
    )


def init_or_restore(exp: Experiment, ckpt: checkpoint.Checkpointer | None) -> TrainState:
    """This workdir's latest checkpoint if there is one (said in the log), else a fresh state.

    A fresh state is not yet prepared: `prepare_fresh_state` runs the method's `prepare_buffers`."""
    rng = jax.random.PRNGKey(exp.config.seed)
    init = functools.partial(
        create_train_state, tx=exp.tx, method=exp.method, ctx=exp.ctx, sample_input=exp.sample_input
    )
    latest = ckpt.latest_step() if ckpt is not None else None
    if latest is None:
        return init(rng)
    abstract = jax.eval_shape(init, rng)
    shardings = state_shardings(abstract, exp.mesh, exp.method.buffer_specs(exp.ctx))
    abstract = jax.tree.map(
        lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), abstract, shardings
    )
    logging.info("Resuming from the checkpoint at step %d in %s", latest, ckpt.directory)
    print(f"Resuming from the checkpoint at step {latest} in {ckpt.directory}", flush=True)
    return ckpt.restore(abstract, latest)


def prepare_fresh_state(exp: Experiment, state: TrainState) -> TrainState:
    """The method's `prepare_buffers` hook, once before step 0 of a new run (never on resume: the
    restored state holds its result). It gets a `RowEmbedder` over the train split."""
    embedder = RowEmbedder(
        exp.config,
        exp.mesh,
        num_rows=exp.ctx.num_train_examples,
        batch_size=exp.config.global_batch_size // jax.process_count(),
    )
    return exp.method.prepare_buffers(exp.ctx, state, embedder)


class _StopRequest:
    """SIGTERM/SIGINT → finish the current step, save a checkpoint, exit."""

    def __init__(self):
        self.signal = None
        self._previous = {}

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread (e.g. notebooks): no handler
                pass
        return self

    def _handle(self, signum, frame):
        self.signal = signal.Signals(signum).name

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def _mean_metrics(window: list[dict]) -> tuple[dict, bool]:
    host = jax.device_get(window)
    finite = all(np.isfinite(m["train/loss"]) for m in host)
    return {k: float(np.mean([m[k] for m in host])) for k in host[-1]}, finite


def _format_eta(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m{seconds % 60:02d}s"


def features_fn(exp: Experiment):
    """jitted uint8 images → backbone features (eval-mode BN, online weights)."""
    apply = lambda v, x, train: exp.ctx.model.apply(v, x, train=train, method="features")
    return uint8_feature_fn(apply, exp.config.data, exp.config)


def extract_features(exp: Experiment, variables, split: str, limit: int = -1, *, batch_size: int):
    """Features and labels of a labelled split, every example once (padding masked out)."""
    return split_features(
        features_fn(exp),
        variables,
        exp.config,
        split,
        mesh=exp.mesh,
        batch_size=batch_size,
        limit=limit,
    )


def knn_monitor(exp: Experiment, state: TrainState) -> dict[str, float]:
    e = exp.config.evals.knn
    data = exp.config.data
    variables = {"params": state.params, "batch_stats": state.batch_stats}
    train_f, train_y = extract_features(
        exp, variables, data.eval_train_split, e.num_train, batch_size=e.batch_size
    )
    test_f, test_y = extract_features(
        exp, variables, data.eval_test_split, e.num_test, batch_size=e.batch_size
    )
    result = knn.weighted_knn(train_f, train_y, test_f, test_y, k=e.k, temperature=e.temperature)
    return {"eval/knn_top1": result["top1"], "eval/knn_top5": result["top5"]}


def train_and_evaluate(
    config: ml_collections.ConfigDict, workdir: str, *, stop_after_steps: int | None = None
) -> TrainState:
    """Pretrain per `config` in `workdir`, resuming from its latest checkpoint.

    `stop_after_steps` ends this process early (with a checkpoint) without changing the schedules — the
    same as a preemption, used by the exact-resume test.
    """
    exp = build_experiment(config)
    os.makedirs(workdir, exist_ok=True)
    checkpoint.check_same_model(workdir, config)
    ckpt = checkpoint.Checkpointer(workdir, keep=config.keep_checkpoints)
    # The data comes first: a missing or corrupt dataset is reported before anything compiles.
    data = pipeline.train_iterator(
        config,
        start_step=ckpt.latest_step() or 0,
        process_index=jax.process_index(),
        process_count=jax.process_count(),
    )
    first_batch = next(data)
    state = init_or_restore(exp, ckpt)
    if ckpt.latest_step() is None:
        state = prepare_fresh_state(exp, state)
    if jax.process_index() == 0:
        checkpoint.write_config(workdir, config)
    writer = create_writer(workdir)
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
    # evals.knn.every_steps: N > 0 at N, 2N, ... and the last step; 0 the last step; -1 never
    knn_every = config.evals.knn.every_steps if "knn" in config.evals else -1
    end_step = total if stop_after_steps is None else min(total, start_step + stop_after_steps)
    window: list[dict] = []
    last_good_step = start_step
    tick, tick_step = time.time(), start_step
    with _StopRequest() as stop:
        for step in range(start_step, end_step):
            host_batch = first_batch if step == start_step else next(data)
            batch = sharding.host_to_global(host_batch, exp.mesh)
            state, metrics = step_fn(state, batch)
            window.append(metrics)
            done = step + 1
            if step == start_step:  # img/s and ETA without the compilation time
                jax.block_until_ready(metrics)
                tick, tick_step = time.time(), done
            is_last = done == end_step
            # Read the signal once per step: a signal that arrives later is handled at the next
            # step, never after this step's save decision (which would exit unsaved).
            stopping = stop.signal
            log_now = done % config.log_every_steps == 0 or is_last or stopping
            save_now = done % config.checkpoint_every_steps == 0 or is_last or stopping
            if log_now or save_now:
                scalars, finite = _mean_metrics(window)
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
                    speed = f"{rate:.1f} img/s | ETA {_format_eta(eta)}"
                writer.write_scalars(done, scalars)
                print(
                    f"step {done}/{total} | loss {scalars['train/loss']:.4f} | {speed}", flush=True
                )
                tick, tick_step = time.time(), done
            if save_now:
                ckpt.save(state, force=True)
            if (
                knn_every != -1
                and ((knn_every > 0 and done % knn_every == 0) or done == total)
                and datasets.has_labels(config.data, config.data.eval_train_split)
            ):
                result = knn_monitor(exp, state)
                writer.write_scalars(done, result)
                print(f"step {done}: kNN top-1 {100 * result['eval/knn_top1']:.2f}%", flush=True)
                tick = time.time()
            if stopping:
                ckpt.wait()
                print(f"{stopping}: saved the checkpoint at step {done}; exiting.", flush=True)
                break
    ckpt.wait()
    writer.flush()
    return state


def _raw_pixels(config, split: str, limit: int):
    """Flattened pixel values in [0, 1] of a labelled split (the 'no encoder' probe baseline)."""
    xs, ys = [], []
    batch_size = config.evals.probe_table.batch_size
    for batch in pipeline.eval_iterator(config, split, batch_size=batch_size):
        keep = batch["mask"]
        xs.append(batch["image"][keep].reshape(int(keep.sum()), -1).astype(np.float32) / 255.0)
        ys.append(batch["label"][keep])
        if 0 < limit <= sum(len(y) for y in ys):
            break
    x, y = np.concatenate(xs), np.concatenate(ys)
    return (x[:limit], y[:limit]) if limit > 0 else (x, y)


def print_probe_table(config, state: TrainState, workdir: str) -> dict[str, float]:
    """Linear probe (same probe, same data) of: the pretrained encoder, the same encoder at random
    init, and raw pixels. Prints a table, logs `probe/*` and returns the top-1 accuracies."""
    from ssl_jax.evaluate.linear_probe import fit_linear_probe

    exp = build_experiment(config)
    train_split, test_split = config.data.eval_train_split, config.data.eval_test_split
    probe = config.evals.probe_table
    limit = probe.num_train
    random_state = init_or_restore(exp, None)
    encoders = {
        "pretrained": {"params": state.params, "batch_stats": state.batch_stats},
        "random init": {"params": random_state.params, "batch_stats": random_state.batch_stats},
    }
    results, timings = {}, {}
    print(
        f"Linear probe ({probe.solver}): features of {train_split} and {test_split} for the "
        "pretrained encoder, the same encoder at random init, and raw pixels",
        flush=True,
    )
    for name, variables in encoders.items():
        print(f"  probe: {name} …", flush=True)
        t0 = time.time()
        tr = extract_features(exp, variables, train_split, limit, batch_size=probe.batch_size)
        te = extract_features(exp, variables, test_split, batch_size=probe.batch_size)
        results[name] = fit_linear_probe(
            *tr, *te, l2_grid=tuple(probe.l2_grid), solver=probe.solver
        )
        timings[name] = time.time() - t0
    print("  probe: raw pixels …", flush=True)
    t0 = time.time()
    results["raw pixels"] = fit_linear_probe(
        *_raw_pixels(config, train_split, limit),
        *_raw_pixels(config, test_split, -1),
        l2_grid=tuple(probe.l2_grid),
        solver=probe.solver,
    )
    timings["raw pixels"] = time.time() - t0
    lines = [
        f"Linear probe on {config.data.name} ({test_split}), "
        f"features of {train_split}{'' if limit <= 0 else f' (first {limit})'}:",
        f"{'encoder':<14} {'top-1':>7} {'top-5':>7} {'l2':>8} {'time':>7}",
    ]
    for name, r in results.items():
        lines.append(
            f"{name:<14} {100 * r['top1']:6.2f}% {100 * r['top5']:6.2f}% {r['l2']:8.0e} "
            f"{timings[name]:6.1f}s"
        )
    table = "\n".join(lines)
    print(table, flush=True)
    if jax.process_index() == 0:
        with open(os.path.join(workdir, "probe_table.txt"), "w") as f:
            f.write(table + "\n")
        writer = create_writer(workdir)
        key = {
            "pretrained": "probe/top1",
            "random init": "probe/random_init_top1",
            "raw pixels": "probe/raw_pixels_top1",
        }
        writer.write_scalars(
            int(jax.device_get(state.step)), {key[n]: r["top1"] for n, r in results.items()}
        )
        writer.flush()
    return {name: r["top1"] for name, r in results.items()}
