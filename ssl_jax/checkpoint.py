"""Checkpoints: the whole TrainState through orbax, restored against an abstract, already-sharded state.

Resume precedence: this workdir's latest checkpoint, else a fresh state. A checkpoint of a different model
shape is refused with the first differing parameter named, before anything is overwritten.
"""

from __future__ import annotations

import json
import os

import jax
import ml_collections
import orbax.checkpoint as ocp

CHECKPOINT_DIR = "checkpoints"
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
        check_compatible(self.manager.item_metadata(step), abstract_state, self.directory)
        return self.manager.restore(step, args=ocp.args.StandardRestore(abstract_state))

    def close(self) -> None:
        self.manager.close()


def _path_shapes(tree, is_leaf=None) -> dict[str, tuple]:
    """'params/backbone/conv1/kernel' → shape, for a state pytree or orbax's metadata tree alike."""

    def name(key) -> str:
        for attr in ("key", "name", "idx"):
            if hasattr(key, attr):
                return str(getattr(key, attr))
        return str(key)

    leaves = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf)[0]
    return {"/".join(name(k) for k in path): tuple(leaf.shape) for path, leaf in leaves}


def check_compatible(metadata, abstract_state, where: str) -> None:
    """Raise CheckpointError naming the first array whose presence or shape differs."""
    stored = _path_shapes(getattr(metadata, "tree", metadata), is_leaf=lambda x: hasattr(x, "shape"))
    wanted = _path_shapes(abstract_state)
    for path in sorted(set(stored) | set(wanted)):
        if path not in stored or path not in wanted:
            side = "this config" if path not in stored else "the checkpoint"
            raise CheckpointError(
                f"the checkpoint in {where} is a run of a different model or method: only "
                f"{side} has {path}. Use another --workdir."
            )
        if stored[path] != wanted[path]:
            raise CheckpointError(
                f"the checkpoint in {where} is a run of a different model shape: {path} has shape "
                f"{stored[path]} there but {wanted[path]} in this config. Use another --workdir."
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
    with open(path) as f:
        return ml_collections.ConfigDict(json.load(f))


def check_same_model(workdir: str, config: ml_collections.ConfigDict) -> None:
    """Refuse to resume a workdir whose stored run has a different model/method than `config`."""
    path = os.path.join(workdir, CONFIG_FILE)
    if not os.path.exists(path):
        return
    stored = read_config(workdir)
    for key in ("method",):
        if stored.get(key) != config.get(key):
            raise CheckpointError(
                f"{workdir} holds a run of config.{key}={stored.get(key)!r}, not {config.get(key)!r}. "
                "Use another --workdir."
            )
    for key in ("backbone", "stem", "width"):
        if stored.model.get(key) != config.model.get(key):
            raise CheckpointError(
                f"{workdir} holds a run of a different model shape: config.model.{key}="
                f"{stored.model.get(key)!r} there, {config.model.get(key)!r} now. Use another --workdir."
            )
