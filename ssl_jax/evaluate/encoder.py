"""Frozen encoders of pretraining runs, and the feature extraction every evaluator shares.

`load_encoder(path)` is the one way the linear probe, kNN, export checks, pictures and notebooks get
features: `path` is a pretraining workdir (its latest checkpoint) or one checkpoint folder
(`WORKDIR/checkpoints/<step>`). The model is the run's method's (`METHODS[config.method].build_model`,
from the run's `config.json`), its online or target/EMA variables are read, and features come from
the model's one `features` method (one encoder's pooled features, or a two-encoder model's
concatenation): nothing here knows the parameter tree's layout.

```
enc = load_encoder("runs/mocov2")              # online weights of the latest checkpoint
f = enc.features(x)                            # x: float32 [N, H, W, C], normalised model input
f = enc.features(enc.normalize(uint8_images))  # ... or uint8 pixels normalised as in pretraining
f = enc.features(x, stages=True)               # every stage's pool, concatenated (the probe table's)
```

What is probed is named in two words (`FEATURES`), printed by every probe and kNN output as
`describe_features`: 'pooled' (the last stage's global average pool, `[N, feature_dim]`: the
papers' protocol) or 'stages' (every stage's pool, concatenated, `[N, stage_feature_dim]`, 960 for
a ResNet-18; the model's `features(x, stages=True)`, the same call the probe table makes).

Extraction over a dataset split (`split_features`, `sharded_split_features`) walks
`pipeline.eval_iterator` batches turned into global arrays sharded `P('data')`; the last batch is
padded and masked, so every example counts exactly once on any number of devices and hosts.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ssl_jax import checkpoint
from ssl_jax.data import datasets, pipeline
from ssl_jax.data.device.eval_input import eval_input, eval_ops
from ssl_jax.methods import memory
from ssl_jax.models import compute_dtype
from ssl_jax.parallel import sharding

WEIGHTS = ("online", "target")
_STATE_KEYS = {
    "online": ("params", "batch_stats"),
    "target": ("target_params", "target_batch_stats"),
}

# (variables, uint8 images [B, H, W, C]) -> features [B, D] float32; jitted.
FeatureFn = Callable[[Any, jax.Array], jax.Array]

# What a probe / kNN reads of the backbone (`config.probe.features`, `config.knn.features`,
# `evals.probe_table.features`), in the words every output prints (`describe_features`).
FEATURES = {
    "pooled": "last stage",  # the last stage's global average pool: the papers' protocol
    "stages": "every stage's pool",  # every stage's global average pool, concatenated
}


def describe_features(features: str, dim: int) -> str:
    """`'stages (every stage's pool, 960-d)'`, `'pooled (last stage, 512-d)'`: how every probe and
    kNN output names what it probed (after `features: `)."""
    return f"{features} ({FEATURES[features]}, {dim}-d)"


@dataclasses.dataclass
class Encoder:
    """A frozen backbone: eval-mode BatchNorm, variables replicated over `mesh`.

    Attributes:
      config: the pretraining run's config (`config.json`).
      variables: `{'params', 'batch_stats'}` of the whole model (backbone(s) and heads).
      model: the method's flax model (`features`, `feature_dim`, `ENCODERS`).
      step: training step of the checkpoint.
      weights: 'online' or 'target'.
      checkpoint: the checkpoint folder read.
      mesh: devices the features are computed on (batch sharded over its 'data' axis).
    """

    config: ml_collections.ConfigDict
    variables: dict
    model: Any
    step: int
    weights: str
    checkpoint: str
    mesh: Mesh

    def __post_init__(self):
        data = self.config.data
        dtype = compute_dtype(self.config.model.dtype)
        self._normalize = jax.jit(lambda x: eval_input(x, data, dtype))
        self._stage_dim: int | None = None

    @property
    def feature_dim(self) -> int:
        """D of `features(x)`: the last stage's pool (512 for a ResNet-18)."""
        return self.model.feature_dim

    @property
    def stage_feature_dim(self) -> int:
        """D of `features(x, stages=True)`: the sum of the stage widths (960 for a ResNet-18)."""
        if self._stage_dim is None:
            size, channels = int(self.config.data.image_size), int(self.config.data.channels)
            x = jax.ShapeDtypeStruct((1, size, size, channels), jnp.float32)
            out = jax.eval_shape(features_apply(self.model, stages=True), self.variables, x)
            self._stage_dim = int(out.shape[-1])
        return self._stage_dim

    def feature_dim_of(self, stages: bool) -> int:
        """`stage_feature_dim` if `stages` else `feature_dim`."""
        return self.stage_feature_dim if stages else self.feature_dim

    def apply(self, variables, x: jax.Array, *, stages: bool = False) -> jax.Array:
        """Pure forward (for use inside other jitted code): normalised `[N, H, W, C]` → `[N, D]`
        (`stages`: every stage's pool, concatenated)."""
        return features_apply(self.model, stages=stages)(variables, x)

    def encoder_variables(self) -> dict[str, dict]:
        """`{name: {'params', 'batch_stats'}}` of each ResNet encoder of the model (`ENCODERS`: one
        for the default model, two for a two-encoder model such as CMC's), e.g. for the export."""
        return {
            name: {
                "params": self.variables["params"][name],
                "batch_stats": self.variables["batch_stats"].get(name, {}),
            }
            for name in self.model.ENCODERS
        }

    def normalize(self, images) -> jax.Array:
        """uint8 pixels `[N, H, W, C]` → model input, as in pretraining: the run's `data.mean` /
        `data.std`, or its recipe's colour space (`eval_input`)."""
        return self._normalize(jnp.asarray(images))

    def features(self, images, *, stages: bool = False) -> jax.Array:
        """Global-average-pooled backbone features `[N, feature_dim]` float32 of normalised float
        images `[N, H, W, C]`; `stages`: every stage's pool, concatenated `[N, stage_feature_dim]`
        (the probe table's `features='stages'`). A numpy input is padded to a multiple of the
        device count and sharded over the mesh; a jax.Array input (e.g. a global batch) is used
        with its own sharding."""
        apply = _jitted_apply(self.model, stages)
        if isinstance(images, jax.Array):
            return apply(self.variables, images)
        images = np.asarray(images, np.float32)
        n = images.shape[0]
        pad = (-n) % self.mesh.size
        if pad:
            images = np.concatenate([images, np.zeros((pad, *images.shape[1:]), images.dtype)])
        x = jax.device_put(images, sharding.batch_sharding(self.mesh))
        return apply(self.variables, x)[:n]

    def feature_fn(self, data_config=None, *, stages: bool = False) -> FeatureFn:
        """jitted `(variables, uint8 images) → features` (`stages`: every stage's pool), normalising
        with `data_config`'s (default: the run's) mean/std or colour space; what `split_features` /
        `sharded_split_features` take."""
        data = data_config or self.config.data
        key = (
            _model_key(self.model),
            tuple(data.mean),
            tuple(data.std),
            repr(eval_ops(data)),
            self.config.model.dtype,
            bool(stages),
        )
        if key not in _FEATURE_FNS:
            apply = features_apply(self.model, stages=stages)
            _FEATURE_FNS[key] = uint8_feature_fn(apply, data, self.config)
        return _FEATURE_FNS[key]

    def split_features(
        self,
        split: str,
        *,
        data_config=None,
        batch_size: int = 256,
        limit: int = -1,
        stages: bool = False,
    ) -> tuple[np.ndarray, np.ndarray]:
        """`(features [n, D], labels [n])` of a split on every host (small data only); `stages`:
        every stage's pool, concatenated."""
        config = _with_data(self.config, data_config)
        return split_features(
            self.feature_fn(config.data, stages=stages),
            self.variables,
            config,
            split,
            mesh=self.mesh,
            batch_size=batch_size,
            limit=limit,
        )


# jitted functions shared by every Encoder of the same architecture (no recompilation per load)
_APPLY_FNS: dict[tuple, Callable] = {}
_FEATURE_FNS: dict[tuple, FeatureFn] = {}


def _model_key(model) -> tuple:
    return (type(model).__name__, repr(model))


def features_apply(model, *, stages: bool = False) -> Callable:
    """`(variables, x, train) → model.features(x)`: the one way every evaluator gets features;
    `stages`: `model.features(x, stages=True)`, every stage's pool concatenated (the probe table's
    `stage_feature_fn` calls the same model method)."""
    kw = {"stages": True} if stages else {}  # pooled: the protocol's plain `features(x)`
    return lambda variables, x, train=False: model.apply(
        variables, x, train=train, method="features", **kw
    )


def _jitted_apply(model, stages: bool = False) -> Callable:
    key = (*_model_key(model), bool(stages))
    if key not in _APPLY_FNS:
        apply = features_apply(model, stages=stages)
        _APPLY_FNS[key] = jax.jit(functools.partial(apply, train=False))
    return _APPLY_FNS[key]


def _with_data(config, data_config):
    if data_config is None:
        return config
    config = ml_collections.ConfigDict(config.to_dict())
    config.data = ml_collections.ConfigDict(
        data_config.to_dict() if hasattr(data_config, "to_dict") else dict(data_config)
    )
    return config


def uint8_feature_fn(apply_fn: Callable, data_config, config) -> FeatureFn:
    """jitted `(variables, uint8 [B, H, W, C]) → apply_fn(variables, x, train=False)`, x the model
    input as in pretraining (`eval_input`: mean/std or the recipe's colour space)."""
    data = ml_collections.ConfigDict(
        data_config.to_dict() if hasattr(data_config, "to_dict") else dict(data_config)
    )
    dtype = compute_dtype(config.model.dtype)

    @jax.jit
    def fn(variables, images):
        x = eval_input(images, data, dtype)
        return apply_fn(variables, x, train=False)

    return fn


def load_encoder(
    path: str,
    *,
    weights: str = "online",
    model_config: ml_collections.ConfigDict | dict | None = None,
    mesh: Mesh | None = None,
) -> Encoder:
    """The backbone of a pretraining run, ready for `.features`.

    Args:
      path: a pretraining workdir (latest checkpoint), its `checkpoints/` folder, or one checkpoint
        folder `checkpoints/<step>`.
      weights: 'online' (default) or 'target' (the EMA / momentum encoder).
      model_config: overrides of `config.model` (e.g. `{'dtype': 'bfloat16'}`); an architecture that
        differs from the checkpoint's is refused with the first differing array named.
      mesh: default: all devices on one 'data' axis.

    Raises:
      checkpoint.CheckpointError: no checkpoint / config, another architecture, no target network.
      ValueError: unknown `weights`.
    """
    if weights not in WEIGHTS:
        raise ValueError(f"weights={weights!r} is not allowed; allowed values: {list(WEIGHTS)}")
    run_dir, step_dir, step = checkpoint.locate(path)
    config = checkpoint.read_config(run_dir)
    if model_config:
        overrides = model_config.to_dict() if hasattr(model_config, "to_dict") else model_config
        config.model.update({k: v for k, v in overrides.items() if v is not None})
    try:
        model = _build_model(config)
    except ValueError as e:
        raise checkpoint.CheckpointError(f"{run_dir}/config.json: {e}") from e
    mesh = sharding.make_mesh() if mesh is None else mesh
    size = int(config.data.image_size)
    sample = jnp.zeros((1, size, size, int(config.data.channels)), jnp.float32)
    abstract = jax.eval_shape(lambda x: model.init(jax.random.PRNGKey(0), x, train=False), sample)
    replicated = NamedSharding(mesh, P())
    as_struct = lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=replicated)
    params_key, stats_key = _STATE_KEYS[weights]
    wanted = {
        params_key: jax.tree.map(as_struct, abstract["params"]),
        stats_key: jax.tree.map(as_struct, abstract.get("batch_stats", {})),
        "step": jax.ShapeDtypeStruct((), jnp.int32, sharding=replicated),
    }
    if weights == "target" and not _has(checkpoint.metadata_tree(step_dir), params_key):
        raise checkpoint.CheckpointError(
            f"weights='target' but the run in {run_dir} (method {config.get('method')!r}) "
            "has no target network; use weights='online'"
        )
    m = config.model
    describe = f"config.model ({m.backbone}, stem {m.stem!r}, width {m.width})"
    restored = checkpoint.restore_subtree(step_dir, wanted, describe=describe)
    variables = {"params": restored[params_key], "batch_stats": restored[stats_key]}
    return Encoder(config, variables, model, int(restored["step"]), weights, step_dir, mesh)


def _build_model(config):
    """The run's model, built by its method (`METHODS[config.method].build_model`)."""
    from ssl_jax.methods import METHODS  # methods import models/losses only: no cycle

    method = config.get("method", "mocov2")
    if method not in METHODS:
        raise ValueError(f"config.method={method!r} is not known; allowed: {sorted(METHODS)}")
    return METHODS[method].build_model(config)


def _has(tree: dict, key: str) -> bool:
    sub = tree.get(key)
    return isinstance(sub, dict) and bool(sub)


# --------------------------------------------------------------------------------------------------
# Split iteration and feature extraction (shared with train.py's kNN monitor and probe table).


def num_eval_batches(
    num_examples: int, batch_size: int, process_count: int, limit: int = -1
) -> int:
    """Batches every process walks: enough for its slice of `eval_iterator` (or of the first
    `limit` examples), the same count on every process."""
    n = num_examples
    covered = n if limit <= 0 else min(limit, n)
    most = 0
    for p in range(process_count):
        start, end = p * n // process_count, (p + 1) * n // process_count
        most = max(most, max(0, min(end, covered) - start))
    return max(1, math.ceil(most / batch_size))


def global_eval_batches(
    config, split: str, *, mesh: Mesh, batch_size: int, limit: int = -1
) -> Iterator[dict[str, jax.Array]]:
    """Global batches `{'image': uint8, 'label', 'index', 'mask'}` sharded `P('data')` over a
    labelled split; `batch_size` per process. With `limit > 0` only the first `limit` examples
    (by position in the split) are unmasked and iteration stops once they are covered."""
    pc, pi = jax.process_count(), jax.process_index()
    if (batch_size * pc) % mesh.size:
        raise ValueError(
            f"eval batch size {batch_size} x {pc} processes is not divisible by the {mesh.size} "
            f"devices; use a multiple of {mesh.size // math.gcd(mesh.size, pc)}"
        )
    total = datasets.num_examples(config.data, split)
    count = num_eval_batches(total, batch_size, pc, limit)
    batches = pipeline.eval_iterator(
        config, split, batch_size=batch_size, process_index=pi, process_count=pc
    )
    for _, batch in zip(range(count), batches):
        mask = batch["mask"]
        if limit > 0:
            mask = mask & (batch["index"] < limit)
        host = {
            "image": batch["image"],
            "label": batch["label"],
            "index": batch["index"],
            "mask": mask,
        }
        yield sharding.host_to_global(host, mesh)


def split_features(
    feature_fn: FeatureFn,
    variables,
    config,
    split: str,
    *,
    mesh: Mesh,
    batch_size: int,
    limit: int = -1,
) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels of a labelled split, gathered on every host in split order, every example
    once (padding masked out); only the first `limit` examples when `limit > 0`."""
    feats, labels, index = [], [], []
    for batch in global_eval_batches(config, split, mesh=mesh, batch_size=batch_size, limit=limit):
        f = feature_fn(variables, batch["image"])
        f, y, i, m = (
            np.asarray(multihost_utils.process_allgather(a, tiled=True))
            for a in (f, batch["label"], batch["index"], batch["mask"])
        )
        feats.append(f[m])
        labels.append(y[m])
        index.append(i[m])
    order = np.argsort(np.concatenate(index), kind="stable")
    return np.concatenate(feats)[order], np.concatenate(labels)[order]


@dataclasses.dataclass
class ShardedFeatures:
    """Features of a split kept on the devices, never gathered: `features [nb, G, D]`, `labels`
    and `mask` `[nb, G]`, all sharded `P(None, 'data')` (each device keeps the rows it computed;
    nb batches of G global rows; mask False on padding)."""

    features: jax.Array
    labels: jax.Array
    mask: jax.Array

    @property
    def num_valid(self) -> int:
        return int(_replicated_scalar(_count(self.mask)))


@jax.jit
def _count(mask):
    return jnp.sum(mask.astype(jnp.int32))


def _replicated_scalar(x: jax.Array) -> np.ndarray:
    """Host value of a replicated array on every process (no gather needed)."""
    return np.asarray(x.addressable_data(0))


def sharded_split_features(
    feature_fn: FeatureFn,
    variables,
    config,
    split: str,
    *,
    mesh: Mesh,
    batch_size: int,
    limit: int = -1,
    feature_dim: int,
) -> ShardedFeatures:
    """Features of a labelled split written batch by batch into preallocated device arrays sharded
    `P(None, 'data')`: no host ever holds them (ImageNet-size kNN memories, cached probe inputs)."""
    pc = jax.process_count()
    total = datasets.num_examples(config.data, split)
    nb = num_eval_batches(total, batch_size, pc, limit)
    g = batch_size * pc
    rows = NamedSharding(mesh, P(None, sharding.DATA_AXIS))
    rows3 = NamedSharding(mesh, P(None, sharding.DATA_AXIS, None))
    feats = _filled((nb, g, feature_dim), "float32", 0, rows3)()
    labels = _filled((nb, g), "int32", -1, rows)()
    mask = _filled((nb, g), "bool", False, rows)()
    write = _writer(feature_fn, rows, rows3)
    for i, batch in enumerate(
        global_eval_batches(config, split, mesh=mesh, batch_size=batch_size, limit=limit)
    ):
        feats, labels, mask = write(
            variables, batch["image"], batch["label"], batch["mask"], feats, labels, mask, i
        )
    return ShardedFeatures(feats, labels, mask)


# The jitted helpers below are cached by their arguments, so repeated extractions (the in-training
# kNN evaluator runs every N steps) reuse one compilation instead of building a new jit each call.
@functools.lru_cache(maxsize=64)
def _filled(shape: tuple, dtype: str, value, out_sharding) -> Callable[[], jax.Array]:
    return jax.jit(lambda: jnp.full(shape, value, dtype), out_shardings=out_sharding)


@functools.lru_cache(maxsize=16)
def _writer(feature_fn, rows, rows3):
    @functools.partial(jax.jit, donate_argnums=(4, 5, 6), out_shardings=(rows3, rows, rows))
    def write(variables, images, y, m, feats, labels, mask, i):
        f = feature_fn(variables, images).astype(jnp.float32)
        f = jnp.where(m[:, None], f, 0.0)
        return feats.at[i].set(f), labels.at[i].set(jnp.where(m, y, -1)), mask.at[i].set(m)

    return write


class RowEmbedder:
    """Embeds every example of a split and writes it at its row of a table sharded over `data`
    (`memory.ROWS`): row i = embedding of the split's example i (`index`), for i < `num_rows`.

    Built on the same sharded eval batches as the feature extraction (eval-mode preprocessing:
    resize + centre crop at `data.image_size`); the table is never gathered (each device writes the
    rows it owns, `memory.write_rows`). For `prepare_buffers` hooks, e.g. InterCLR's bank of the
    whole train set before step 0.
    """

    def __init__(self, config, mesh: Mesh, *, num_rows: int, batch_size: int, split: str = ""):
        self.config, self.mesh = config, mesh
        self.num_rows, self.batch_size = num_rows, batch_size
        self.split = split or config.data.train_split
        self._writers: dict = {}

    def embed_rows(self, table: jax.Array, embed_fn: Callable, variables) -> jax.Array:
        """`table [num_rows, D]` with row i ← `embed_fn(variables, x_i)`; `embed_fn` maps normalised
        float images `[B, H, W, C]` to `[B, D]` (e.g. the projection of the query encoder). Returns
        the new table (the argument is donated)."""
        if table.shape[0] != self.num_rows:
            raise ValueError(f"table has {table.shape[0]} rows; the split has {self.num_rows}")
        key = id(embed_fn)
        if key not in self._writers:
            self._writers[key] = (embed_fn, self._writer(embed_fn))
        write = self._writers[key][1]
        for batch in global_eval_batches(
            self.config,
            self.split,
            mesh=self.mesh,
            batch_size=self.batch_size,
            limit=self.num_rows,
        ):
            table = write(variables, batch["image"], batch["index"], batch["mask"], table)
        return table

    def _writer(self, embed_fn):
        data = self.config.data
        dtype = compute_dtype(self.config.model.dtype)
        mesh = self.mesh

        @functools.partial(jax.jit, donate_argnums=(4,))
        def write(variables, images, index, mask, table):
            rows = embed_fn(variables, eval_input(images, data, dtype))
            index = jnp.where(mask, index, table.shape[0])  # padding: no device owns it → dropped
            return memory.write_rows(table, index, rows.astype(table.dtype), mesh)

        return write
