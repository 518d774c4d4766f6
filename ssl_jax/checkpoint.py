"""Checkpoints: the whole TrainState through orbax, restored against an abstract, already-sharded state.

Resume precedence: this workdir's latest checkpoint, else a fresh state. A checkpoint of a different model
shape is refused with the first differing parameter named, before anything is overwritten.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time

import jax
import ml_collections
import orbax.checkpoint as ocp

CHECKPOINT_DIR = "checkpoints"
DAMAGED_DIR = "damaged_checkpoints"  # checkpoints that could not be restored, kept for a look
CONFIG_FILE = "config.json"


class CheckpointError(RuntimeError):
    """A checkpoint cannot be used with this config (missing, or a different model)."""


def checkpoint_dir(path: str) -> str:
    """The orbax directory of a workdir, or `path` itself if it already is one."""
    sub = os.path.join(path, CHECKPOINT_DIR)
    return sub if os.path.isdir(sub) else path


class Checkpointer:
    def __init__(self, workdir: str, *, keep: int = 3, create: bool = True):
        self.directory = os.path.abspath(os.path.join(workdir, CHECKPOINT_DIR))
        self.manager = ocp.CheckpointManager(
            self.directory,
            options=ocp.CheckpointManagerOptions(max_to_keep=keep, create=create),
            item_handlers=ocp.StandardCheckpointHandler(),
        )

    def latest_step(self) -> int | None:
        return self.manager.latest_step()

    def save(self, state, *, force: bool = False) -> None:
        step = int(jax.device_get(state.step))
        if step in self.manager.all_steps():
            return
        self.manager.save(step, args=ocp.args.StandardSave(state), force=force)

    def wait(self) -> None:
        self.manager.wait_until_finished()

    def restore(self, abstract_state, step: int | None = None):
        """Restore into the layout of `abstract_state` (ShapeDtypeStructs with shardings)."""
        step = self.latest_step() if step is None else step
        if step is None:
            raise CheckpointError(f"no checkpoint in {self.directory}")
        _drop_stray_read_callbacks()  # a damaged checkpoint: one line, not hundreds of tracebacks
        check_compatible(self.manager.item_metadata(step), abstract_state, self.directory)
        check_shardable(abstract_state, self.directory)
        return self.manager.restore(step, args=ocp.args.StandardRestore(abstract_state))

    def restore_intact(self, abstract_state):
        """`(state, step)` of the newest checkpoint that restores. A damaged one (a truncated or
        missing file: orbax or TensorStore cannot read it) is said in one line naming its step and
        what could not be read, moved aside to `<workdir>/damaged_checkpoints/<step>` (kept, and out
        of the way of the run's next save of that step) and the next older one is tried, which is
        said too. CheckpointError when none restores, or when a checkpoint is of another model."""
        damaged = []
        for step in sorted(self.manager.all_steps(), reverse=True):
            try:
                state = self.restore(abstract_state, step)
            except CheckpointError:  # another model, or shards that do not fit: not damage
                raise
            except Exception as err:  # noqa: BLE001 - unreadable metadata or array: damage
                damaged.append(self._set_aside(step, err))
                continue
            if damaged:
                print(
                    f"resuming from the newest intact checkpoint, step {step} "
                    f"(set aside: step {', '.join(map(str, damaged))})",
                    flush=True,
                )
            return state, step
        if not damaged:
            raise CheckpointError(f"no checkpoint in {self.directory}")
        raise CheckpointError(
            f"no checkpoint in {self.directory} can be restored: step "
            f"{', '.join(map(str, damaged))} damaged (moved to "
            f"{os.path.join(os.path.dirname(self.directory), DAMAGED_DIR)}). Start the run in "
            "another --workdir, or remove this one's checkpoints/ to start it again."
        )

    def _set_aside(self, step: int, err: Exception) -> int:
        """Says why checkpoint `step` cannot be restored, moves it to `damaged_checkpoints/`."""
        source = os.path.join(self.directory, str(step))
        target = os.path.join(os.path.dirname(self.directory), DAMAGED_DIR, str(step))
        print(
            f"the checkpoint at step {step} cannot be restored: {describe_damage(err, source)}; "
            f"moved to {target}",
            flush=True,
        )
        if jax.process_index() == 0:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if os.path.exists(target):
                target += f".{int(time.time())}"
            shutil.move(source, target)
        self.manager.reload()
        return step

    def close(self) -> None:
        self.manager.close()


def _drop_stray_read_callbacks() -> None:
    """After a failed read, TensorStore still completes the reads that were in flight and calls
    back into orbax's event loop, which orbax closed when the first read failed: each callback's
    `RuntimeError('Event loop is closed')` reaches `sys.unraisablehook`, hundreds of tracebacks
    after the one line that says what is damaged. Only those are dropped; anything else is passed
    to the hook there was."""
    previous = sys.unraisablehook
    if getattr(previous, "drops_stray_read_callbacks", False):
        return

    def hook(unraisable):
        exc = unraisable.exc_value
        if isinstance(exc, RuntimeError) and str(exc) == "Event loop is closed":
            return
        previous(unraisable)

    hook.drops_stray_read_callbacks = True
    sys.unraisablehook = hook


def describe_damage(err: BaseException, step_dir: str) -> str:
    """One line for an error reading a checkpoint: the innermost cause's first line (TensorStore's
    names the array and the file, e.g. 'OUT_OF_RANGE: Error reading "buffers.queue/0.0" in OCDBT
    database at local file ...'), shortened, with the step folder where it names none; a metadata
    file that is not valid JSON is named (the JSON error names no file)."""
    seen = []
    while err is not None and err not in seen and len(seen) < 10:
        seen.append(err)
        err = err.__cause__ or (None if err.__suppress_context__ else err.__context__)
    inner = seen[-1]
    if isinstance(inner, json.JSONDecodeError):
        broken = _broken_json_files(step_dir)
        if broken:
            return f"{', '.join(broken)}: not valid JSON (cut short?): {inner}"
    first = (str(inner).strip().splitlines() or [type(inner).__name__])[0]
    # TensorStore nests 'local file "..."' from the database down to the file it failed on: name
    # the innermost first, as the shortened message may cut it
    files = re.findall(r'local file "([^"]+)"', first)
    first = first if len(first) <= 240 else first[:237] + "..."
    if files and not files[-1].endswith("/"):
        return f"{files[-1]}: {type(inner).__name__}: {first}"
    where = "" if step_dir.rstrip("/") in first else f"{step_dir}: "  # the shortened text names it
    return f"{where}{type(inner).__name__}: {first}"


def _broken_json_files(step_dir: str) -> list[str]:
    """The metadata files (orbax's `*METADATA`) of a checkpoint folder that do not parse."""
    broken = []
    for folder, _, names in os.walk(step_dir):
        for name in sorted(names):
            if not name.endswith("METADATA"):
                continue
            path = os.path.join(folder, name)
            try:
                with open(path) as f:
                    json.load(f)
            except (OSError, ValueError):
                broken.append(path)
    return broken


def _path_shapes(tree, is_leaf=None) -> dict[str, tuple]:
    """'params/backbone/conv1/kernel' → shape, for a state pytree or orbax's metadata tree alike."""

    def name(key) -> str:
        for attr in ("key", "name", "idx"):
            if hasattr(key, attr):
                return str(getattr(key, attr))
        return str(key)

    leaves = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)[0]
    return {"/".join(name(k) for k in path): tuple(leaf.shape) for path, leaf in leaves}


def _first_difference(stored: dict, wanted: dict) -> tuple[str, str] | None:
    """The first path, in sorted order, where two `_path_shapes` maps differ and how: 'missing'
    (only `wanted` has it), 'extra' (only `stored` has it) or 'shape'; None where they agree."""
    for path in sorted(set(stored) | set(wanted)):
        if path not in stored:
            return path, "missing"
        if path not in wanted:
            return path, "extra"
        if stored[path] != wanted[path]:
            return path, "shape"
    return None


def check_compatible(metadata, abstract_state, where: str) -> None:
    """Raise CheckpointError naming the first array whose presence or shape differs."""
    stored = _path_shapes(
        getattr(metadata, "tree", metadata), is_leaf=lambda x: hasattr(x, "shape")
    )
    wanted = _path_shapes(abstract_state)
    difference = _first_difference(stored, wanted)
    if difference is None:
        return
    path, how = difference
    if how != "shape":
        side = "this config" if how == "missing" else "the checkpoint"
        raise CheckpointError(
            f"the checkpoint in {where} is a run of a different model or method: "
            f"only {side} has {path}. Use another --workdir."
        )
    raise CheckpointError(
        f"the checkpoint in {where} is a run of a different model shape: {path} has shape "
        f"{stored[path]} there but {wanted[path]} in this config. Use another --workdir."
    )


def check_shardable(abstract_state, where: str) -> None:
    """Raise CheckpointError naming the first sharded array (a queue, a bank) whose sharded axis is
    not divisible by the new mesh's devices: a run saved on N devices resumes on any device count
    that divides its queues and banks (orbax reshards them), and only on those."""
    leaves = jax.tree_util.tree_flatten_with_path(abstract_state)[0]
    for path, leaf in leaves:
        sharding = getattr(leaf, "sharding", None)
        spec = getattr(sharding, "spec", None)
        if spec is None:
            continue
        for axis, names in enumerate(spec):
            names = () if names is None else (names if isinstance(names, tuple) else (names,))
            devices = 1
            for name in names:
                devices *= sharding.mesh.shape[name]
            if leaf.shape[axis] % devices:
                name = "/".join(str(getattr(k, "name", getattr(k, "key", k))) for k in path)
                raise CheckpointError(
                    f"the checkpoint in {where} cannot be restored on {devices} devices: {name} "
                    f"has {leaf.shape[axis]} rows, which are sharded over the devices and do not "
                    f"divide by {devices}. Resume on a device count that divides {leaf.shape[axis]}."
                )


def write_config(workdir: str, config: ml_collections.ConfigDict) -> None:
    """Save the run's config next to its checkpoints (read by load_encoder and resume checks)."""
    path = os.path.join(workdir, CONFIG_FILE)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(config.to_json_best_effort(indent=2))
    os.replace(tmp, path)


def read_config(workdir: str) -> ml_collections.ConfigDict:
    path = os.path.join(workdir, CONFIG_FILE)
    if not os.path.exists(path):
        raise CheckpointError(f"{path} not found: {workdir} is not an ssl_jax pretraining workdir")
    try:
        with open(path) as f:
            return ml_collections.ConfigDict(json.load(f))
    except (OSError, ValueError) as e:  # json.JSONDecodeError is a ValueError
        raise CheckpointError(
            f"{path} cannot be read ({type(e).__name__}: {e}): the run's config is damaged; "
            "restore it from a copy (it is the config the run was started with, as JSON)"
        ) from e


def check_same_model(workdir: str, config: ml_collections.ConfigDict) -> None:
    """Refuse to resume a workdir whose stored run has a different model/method than `config`."""
    path = os.path.join(workdir, CONFIG_FILE)
    if not os.path.exists(path):
        return
    stored = read_config(workdir)
    for key in ("method",):
        if stored.get(key) != config.get(key):
            raise CheckpointError(
                f"{workdir} holds a run of config.{key}={stored.get(key)!r}, "
                f"not {config.get(key)!r}. Use another --workdir."
            )
    for key in ("backbone", "stem", "width"):
        if stored.model.get(key) != config.model.get(key):
            raise CheckpointError(
                f"{workdir} holds a run of a different model shape: "
                f"config.model.{key}={stored.model.get(key)!r} there, "
                f"{config.model.get(key)!r} now. Use another --workdir."
            )


def config_changes(workdir: str, config: ml_collections.ConfigDict) -> list[str]:
    """`'key: old → new'` for every config value that differs from the run's stored `config.json`
    (compared as JSON, so a tuple equals its list), e.g. a resume with another `total_steps`,
    whose schedules then follow the new value; [] when nothing differs or nothing is stored."""
    if not os.path.exists(os.path.join(workdir, CONFIG_FILE)):
        return []
    before = _flat(read_config(workdir).to_dict())
    after = _flat(json.loads(config.to_json_best_effort()))
    return [
        f"{key}: {before.get(key, '(absent)')} → {after.get(key, '(absent)')}"
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    ]


def _flat(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


# --------------------------------------------------------------------------------------------------
# Read-only access for evaluation and export: one step's arrays, restored by name.

ITEM_DIR = "default"  # the single item's folder inside a step folder (StandardCheckpointHandler)


def locate(path: str) -> tuple[str, str, int]:
    """`(run_dir, step_dir, step)` of a pretraining workdir (its latest checkpoint), its
    `checkpoints/` folder, or one checkpoint folder `checkpoints/<step>` (also `<step>/default`).

    `run_dir` is the folder holding `config.json`. Raises CheckpointError when there is no
    checkpoint or no config."""
    path = os.path.abspath(path.rstrip("/") or "/")
    if not os.path.exists(path):
        raise CheckpointError(f"{path} does not exist: give a pretraining workdir or a checkpoint")
    # checkpoints/<step>/default → checkpoints/<step>; a workdir (config.json inside) may itself be
    # named 'default' or a number
    is_run = os.path.exists(os.path.join(path, CONFIG_FILE))
    parent = os.path.dirname(path)
    if os.path.basename(path) == ITEM_DIR and os.path.basename(parent).isdigit() and not is_run:
        path = parent
    name = os.path.basename(path)
    if name.isdigit() and os.path.isdir(os.path.join(path, ITEM_DIR)) and not is_run:
        step_dir, step = path, int(name)
        run_dir = os.path.dirname(os.path.dirname(path))
    else:
        directory = checkpoint_dir(path)
        is_ckpt_dir = os.path.basename(directory) == CHECKPOINT_DIR
        run_dir = os.path.dirname(directory) if is_ckpt_dir else path
        steps = _committed_steps(directory)
        if not steps:
            raise CheckpointError(
                f"no checkpoint in {path}: {directory} holds no finished checkpoint "
                "(pretraining saves one every config.checkpoint_every_steps and at the end). "
                "Pass a workdir whose run has saved, or one of its checkpoints/<step> folders."
            )
        step = steps[-1]
        step_dir = os.path.join(directory, str(step))
    if not os.path.exists(os.path.join(run_dir, CONFIG_FILE)):
        raise CheckpointError(
            f"{os.path.join(run_dir, CONFIG_FILE)} not found: {path} is not inside an ssl_jax "
            "pretraining workdir (config.json next to checkpoints/)"
        )
    return run_dir, step_dir, step


def newest_step(workdir: str) -> int | None:
    """The newest complete checkpoint's step in a workdir (None: none), without opening it."""
    steps = _committed_steps(os.path.join(workdir, CHECKPOINT_DIR))
    return steps[-1] if steps else None


def _committed_steps(directory: str) -> list[int]:
    if not os.path.isdir(directory):
        return []
    steps = []
    for name in os.listdir(directory):
        item = os.path.join(directory, name, ITEM_DIR)
        # orbax writes into a temporary folder and renames it once complete
        if name.isdigit() and os.path.isdir(item):
            steps.append(int(name))
    return sorted(steps)


def metadata_tree(step_dir: str) -> dict:
    """Stored tree of one checkpoint: nested dicts of leaves with `.shape` / `.dtype`. A checkpoint
    whose metadata cannot be read is one CheckpointError (`damage_error`)."""
    try:
        return _read_metadata(step_dir)
    except Exception as err:  # noqa: BLE001 - unreadable metadata: damage, said in one line
        raise damage_error(step_dir, err) from err


def _read_metadata(step_dir: str) -> dict:
    from etils import epath

    _drop_stray_read_callbacks()

    meta = ocp.PyTreeCheckpointHandler().metadata(epath.Path(step_dir) / ITEM_DIR)
    return getattr(meta, "tree", meta)


def _restore_arrays(step_dir: str, abstract: dict) -> dict:
    _drop_stray_read_callbacks()
    restore_args = ocp.checkpoint_utils.construct_restore_args(abstract)
    return ocp.PyTreeCheckpointer().restore(
        os.path.join(step_dir, ITEM_DIR),
        args=ocp.args.PyTreeRestore(item=abstract, restore_args=restore_args, partial_restore=True),
    )


def damage_error(
    step_dir: str, err: BaseException, abstract: dict | None = None
) -> CheckpointError:
    """One CheckpointError for a checkpoint that cannot be read (export, `load_encoder`, the probe
    and kNN jobs): the step, what could not be read (`describe_damage`), and the other steps of the
    same run that can be (their metadata and, given `abstract`, those arrays), newest first, with
    the folder to pass instead."""
    step_dir = os.path.abspath(step_dir.rstrip("/"))
    directory, name = os.path.split(step_dir)
    readable = []
    for step in reversed(_committed_steps(directory)):
        if str(step) == name:
            continue
        other = os.path.join(directory, str(step))
        try:
            _read_metadata(other)
            if abstract is not None:
                _restore_arrays(other, abstract)
        except Exception:  # noqa: BLE001 - damaged too: not offered
            continue
        readable.append(step)
    if readable:
        hint = (
            f"steps that can be read: {', '.join(map(str, readable))}; pass one's folder instead "
            f"of the workdir, e.g. {os.path.join(directory, str(readable[0]))}"
        )
    else:
        hint = "no other checkpoint of this run can be read"
    return CheckpointError(
        f"the checkpoint at step {name} cannot be read: {describe_damage(err, step_dir)}. {hint}"
    )


def restore_subtree(step_dir: str, abstract: dict, *, describe: str = "this config") -> dict:
    """Restore only the arrays named by `abstract`: nested dicts of ShapeDtypeStructs with shardings,
    keyed as the stored state, e.g. `{'params': {'backbone': ...}, 'step': ...}`.

    The requested subtrees must match the stored ones exactly (same arrays, same shapes); otherwise
    CheckpointError names the first differing array. `describe` names the model in that message."""
    stored = metadata_tree(step_dir)
    has_shape = lambda x: hasattr(x, "shape")
    for top, wanted in abstract.items():
        keys = list(wanted) if isinstance(wanted, dict) else [None]
        for key in keys:
            prefix = top if key is None else f"{top}/{key}"
            have = stored.get(top)
            if key is not None:
                have = have.get(key) if isinstance(have, dict) else None
            if have is None or (isinstance(have, dict) and not have):
                raise CheckpointError(
                    f"the checkpoint {step_dir} is not one of {describe}: it has no {prefix}"
                )
            want = wanted if key is None else wanted[key]
            a = _path_shapes({prefix: have}, is_leaf=has_shape)
            b = _path_shapes({prefix: want})
            difference = _first_difference(a, b)
            if difference is None:
                continue
            path, how = difference
            if how == "missing":
                raise CheckpointError(
                    f"the checkpoint {step_dir} is not one of {describe}: it has no {path}"
                )
            if how == "extra":
                raise CheckpointError(
                    f"the checkpoint {step_dir} is not one of {describe}: it has {path}, "
                    f"which {describe} does not have"
                )
            raise CheckpointError(
                f"the checkpoint {step_dir} is not one of {describe}: "
                f"{path} has shape {a[path]} there but {b[path]} in {describe}"
            )
    try:
        return _restore_arrays(step_dir, abstract)
    except Exception as err:  # noqa: BLE001 - a truncated or missing array file: damage
        raise damage_error(step_dir, err, abstract) from err
