"""The training loop's input: the one object the loop asks for batches and for the views it trains on.

Three config keys decide where views are made: `data.pipeline` ('tfdata', 'device' or 'auto'),
`data.device_ops` (the recipes' colour ops in the step) and `data.device_crops` (the crops cut in
the step from canvases). `TrainInput.build` resolves them once, from the config and the split's
size and shape (no pixel read), into one mode:

| mode            | the host sends (per row)            | the step runs                               |
|-----------------|-------------------------------------|---------------------------------------------|
| `device_table`  | the row's index and label           | the whole recipe on the split in device memory (`device_pipeline`) |
| `host_canvases` | a canvas, each view's box and flip  | the crops (`device/canvas.cut_views`), the colour ops |
| `host_crops`    | uint8 views, cropped and flipped    | the colour ops (`device/recipe.apply_recipe`) |
| `host_views`    | uint8 views, the whole recipe run   | the normalisation (or a `color_space` op)   |

The loop then calls `batches(start_step)`, `abstract_batch()`, `shardings()` and
`views(batch, rng, dtype)`, and asks nothing else of the config's data keys. The split's size and
epochs are `train_split`'s.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp

from ssl_jax.data import datasets, device_pipeline, pipeline, train_split
from ssl_jax.data.device import canvas
from ssl_jax.data.device import recipe as device_recipe
from ssl_jax.data.device.checks import device_crop_side
from ssl_jax.parallel import sharding

DEVICE_TABLE = "device_table"
HOST_CANVASES = "host_canvases"
HOST_CROPS = "host_crops"
HOST_VIEWS = "host_views"
MODES = (DEVICE_TABLE, HOST_CANVASES, HOST_CROPS, HOST_VIEWS)
_SIZE_OPS = ("random_resized_crop", "resize", "center_crop")


def input_mode(config: Any) -> str:
    """The mode (module doc) of `config.data.pipeline` / `device_ops` / `device_crops`; 'auto'
    decided by `device_pipeline.resolve` from the split's size and shape."""
    data = config.data
    if device_pipeline.resolve(config) == "device":
        return DEVICE_TABLE
    if device_crop_side(data):
        return HOST_CANVASES
    return HOST_CROPS if data.get("device_ops", False) else HOST_VIEWS


def view_recipes(data_config: Any) -> tuple[tuple[dict, ...], ...]:
    """Each view's recipe, as a tuple of op dicts (hashable order, plain dicts)."""
    return tuple(tuple(dict(op) for op in data_config.recipes[v]) for v in data_config.views)


def view_side(data_config: Any, view: int) -> int:
    """Output side of a view's recipe: the size of its last crop/resize op (else the eval size)."""
    size = data_config.image_size
    for op in data_config.recipes[data_config.views[view]]:
        if op["op"] in _SIZE_OPS:
            size = op["size"]
    return size


def prepare_views(config: Any, views, rng: jax.Array, dtype) -> tuple[jnp.ndarray, ...]:
    """uint8 views of a tf.data batch → model input in `dtype` as the step makes them
    (`host_crops` with `data.device_ops`, else `host_views`)."""
    data = config.data
    return device_recipe.model_views(
        views,
        view_recipes(data),
        rng,
        tuple(data.mean),
        tuple(data.std),
        dtype,
        colour_ops=bool(data.get("device_ops", False)),
    )


@dataclasses.dataclass(frozen=True)
class TrainInput:
    """The train split's batches and views for one run (module doc); built before any data is
    read. `num_train` rows are used, `steps_per_epoch` for the schedules (`train_split`)."""

    config: Any
    mesh: jax.sharding.Mesh
    mode: str
    recipes: tuple[tuple[dict, ...], ...]
    num_train: int
    steps_per_epoch: int

    @classmethod
    def build(cls, config: Any, mesh: jax.sharding.Mesh) -> TrainInput:
        """The mode resolved once; the row count from the split's size (no pixel read)."""
        n = train_split.num_train(config)
        return cls(
            config,
            mesh,
            input_mode(config),
            view_recipes(config.data),
            n,
            train_split.schedule_steps_per_epoch(config, n),
        )

    def prepare(self) -> None:
        """Makes the data set ready to read (`datasets.prepare`: a tfds download or its message);
        a data set that cannot be had raises `DataError` here, and a global batch larger than the
        split `ConfigError` (`train_split.steps_per_epoch`), before anything compiles."""
        datasets.prepare(self.config.data)
        train_split.steps_per_epoch(self.config, self.num_train)

    def view_shape(self, view: int) -> tuple[int, int, int]:
        """`(side, side, channels)` of view `view` as the model sees it."""
        side = view_side(self.config.data, view)
        return (side, side, int(self.config.data.channels))

    def shardings(self):
        """The step's batch sharding: `P('data')` for every leaf; `device_table`: `{'index',
        'label'}` sharded and `'images'`, the split's table, replicated."""
        rows = sharding.batch_sharding(self.mesh)
        if self.mode != DEVICE_TABLE:
            return rows
        return {"index": rows, "label": rows, "images": sharding.replicated(self.mesh)}

    def abstract_batch(self) -> dict:
        """The global batch `batches` yields, as sharded `jax.ShapeDtypeStruct`s: uint8 views at
        each recipe's size (`host_canvases`: the canvases, crop boxes and flips; `device_table`:
        the indices, labels and the split's replicated table, shaped from its size)."""
        b, data = int(self.config.global_batch_size), self.config.data
        spec = sharding.batch_sharding(self.mesh)
        channels, num_views = int(data.channels), len(data.views)

        def rows(dtype, *shape):
            return jax.ShapeDtypeStruct((b, *shape), dtype, sharding=spec)

        labels = {"index": rows(jnp.int32), "label": rows(jnp.int32)}
        if self.mode == DEVICE_TABLE:
            return {**labels, "images": device_pipeline.table_spec(self.config, self.mesh)}
        if self.mode == HOST_CANVASES:
            side = device_crop_side(data)
            pixels = {
                "canvas": rows(jnp.uint8, side, side, channels),
                "boxes": rows(jnp.int32, num_views, 4),
                "flips": rows(jnp.bool_, num_views),
            }
        else:
            pixels = {
                "views": tuple(rows(jnp.uint8, *self.view_shape(v)) for v in range(num_views))
            }
        return {**pixels, **labels}

    def batches(self, start_step: int, *, prefetch: int) -> Iterator[dict]:
        """Global batches for step `start_step` onwards, `prefetch` transferred ahead of the one
        handed out. The first host batch is read here, so a missing or corrupt data set is
        reported by this call, before anything compiles; `device_table` places the split in
        device memory first (and says so)."""
        config = self.config
        process = {"process_index": jax.process_index(), "process_count": jax.process_count()}
        table = None
        if self.mode == DEVICE_TABLE:  # the split in device memory; the host sends indices
            table = device_pipeline.load(config, self.mesh)
            print(
                f"{config.data.name}/{config.data.train_split}: {table.num_examples} images "
                f"{tuple(table.images.shape[1:])} in device memory "
                f"({table.images.nbytes / 2**20:.1f} MiB per device); the recipes run in the step",
                flush=True,
            )
            host = device_pipeline.index_batches(
                config, table.labels, start_step=start_step, **process
            )
        else:
            host = pipeline.train_iterator(config, start_step=start_step, **process)
        first = next(host)
        feed = sharding.prefetch_to_device(itertools.chain([first], host), prefetch, self.mesh)
        if table is None:
            return feed
        return ({**batch, "images": table.images} for batch in feed)

    def views(self, batch: dict, rng: jax.Array, dtype) -> tuple[jnp.ndarray, ...]:
        """Inside the step: the model input of every view of `batch`, `[B, h_v, w_v, C]` in
        `dtype`, the random ops keyed from `rng`."""
        data = self.config.data
        mean, std = tuple(data.mean), tuple(data.std)
        if self.mode == DEVICE_TABLE:
            return device_pipeline.step_views(data, batch["images"], batch["index"], rng, dtype)
        if "views" in batch:  # cut on the host (or synthetic views, which any host mode takes)
            uint8 = tuple(batch["views"])
        else:  # host_canvases: cut here
            uint8 = canvas.cut_views(batch["canvas"], batch["boxes"], batch["flips"], self.recipes)
        return device_recipe.model_views(
            uint8, self.recipes, rng, mean, std, dtype, colour_ops=self.mode != HOST_VIEWS
        )
