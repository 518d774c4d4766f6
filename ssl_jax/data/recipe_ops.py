"""What each recipe op is, without TensorFlow or JAX: its keys, the uniforms it reads, where it
runs, the validation of a recipe, and the definitions both twins of an op read (RandAugment's op
table, the jigsaw's cells, the blur's kernel size, a fill's luma).

The host ops (`host/`, tf) and the device ops (`device/`, jnp) both read a view's uniforms
`u [N, num_draws(recipe)]` in this layout (op k reads its own columns), so a recipe means the same
on either side and tests can feed both the same draws.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ssl_jax.config_checks import ConfigError
from ssl_jax.data import color

RRC_ATTEMPTS = 10

# RandAugment (timm / PyContrast `rand-n2-m10-mstd0.5`): the validation and both twins
# (`host/randaugment.py`, `device/randaugment.py`) read its table.
MAX_LEVEL = 10.0
IMAGENET_FILL = (124, 116, 104)  # round(255 · ImageNet mean)
# `ImageEnhance` factor at level m: `ENHANCE_SCALE·m/10 + ENHANCE_BASE` (in [0.1, 1.9]); with
# `increasing` (timm's later table) `max(ENHANCE_BASE, 1 ± ENHANCE_INCREASING·m/10)`.
ENHANCE_SCALE = 1.8
ENHANCE_BASE = 0.1
ENHANCE_INCREASING = 0.9


@dataclasses.dataclass(frozen=True)
class RandAugmentOp:
    """One RandAugment op: `fn`, the name of the function that implements it in each twin;
    `scale`, its argument at level `MAX_LEVEL` (at level m: `scale·m/10`; 0: no magnitude);
    `signed`, whether the sign draw flips the argument."""

    fn: str
    scale: float = 0.0
    signed: bool = False


# PyContrast's / timm's level → argument table (`_MAX_LEVEL` 10), in timm's `_RAND_TRANSFORMS`
# order, `Identity` last.
RAND_AUGMENT = {
    "AutoContrast": RandAugmentOp("auto_contrast"),
    "Equalize": RandAugmentOp("equalize"),
    "Invert": RandAugmentOp("invert"),
    "Rotate": RandAugmentOp("rotate", 30.0, signed=True),  # degrees, counter-clockwise
    "PosterizeTpu": RandAugmentOp("posterize", 4),  # bits kept
    "Solarize": RandAugmentOp("solarize", 256),  # threshold
    "SolarizeAdd": RandAugmentOp("solarize_add", 110),  # added to pixels below 128
    "Color": RandAugmentOp("color", ENHANCE_SCALE),
    "Contrast": RandAugmentOp("contrast", ENHANCE_SCALE),
    "Brightness": RandAugmentOp("brightness", ENHANCE_SCALE),
    "Sharpness": RandAugmentOp("sharpness", ENHANCE_SCALE),
    "ShearX": RandAugmentOp("shear_x", 0.3, signed=True),  # x shift per row
    "ShearY": RandAugmentOp("shear_y", 0.3, signed=True),  # y shift per column
    "TranslateXRel": RandAugmentOp("translate_x_rel", 0.45, signed=True),  # of the width
    "TranslateYRel": RandAugmentOp("translate_y_rel", 0.45, signed=True),  # of the height
    "Identity": RandAugmentOp("identity"),
}
# timm `_RAND_TRANSFORMS` (PyContrast's aug "D")
RAND_TRANSFORMS = tuple(name for name in RAND_AUGMENT if name != "Identity")
# PyContrast `_RAND_TRANSFORMS_CMC` (aug "E", CMCv2): no colour ops.
RAND_TRANSFORMS_CMC = (
    "AutoContrast",
    "Identity",
    "Rotate",
    "Sharpness",
    "ShearX",
    "ShearY",
    "TranslateXRel",
    "TranslateYRel",
)
RAND_AUGMENT_OPS = tuple(RAND_AUGMENT)  # every op name a recipe may list
# Ops whose result depends on the sign draw.
RAND_AUGMENT_SIGNED = tuple(name for name, op in RAND_AUGMENT.items() if op.signed)
# Uniforms per drawn op: which op, applied or not, magnitude (inverse normal CDF), sign.
DRAWS_PER_OP = 4

# op -> (required keys, optional keys)
OP_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "random_resized_crop": (frozenset({"size"}), frozenset({"scale", "ratio", "antialias"})),
    "resize": (frozenset({"size"}), frozenset({"antialias"})),
    "center_crop": (frozenset({"size"}), frozenset()),
    "horizontal_flip": (frozenset({"p"}), frozenset()),
    "color_jitter": (frozenset({"p"}), frozenset({"brightness", "contrast", "saturation", "hue"})),
    "grayscale": (frozenset({"p"}), frozenset()),
    "gaussian_blur": (frozenset({"p", "sigma"}), frozenset({"kernel_size"})),
    "solarize": (frozenset({"p", "threshold"}), frozenset()),
    "color_space": (frozenset({"space"}), frozenset()),
    "rand_augment": (
        frozenset(),
        frozenset({"num_ops", "magnitude", "magnitude_std", "p", "ops", "fill", "increasing"}),
    ),
    "jigsaw": (frozenset({"grid", "patch"}), frozenset()),
    "learned_flow": (frozenset({"path"}), frozenset()),
}
# Uniforms each op reads from its slice of `u` (`op_draws`: rand_augment reads 4 per drawn op,
# jigsaw 2 per cell).
NUM_DRAWS = {
    "random_resized_crop": 2 * RRC_ATTEMPTS + 2,
    "resize": 0,
    "center_crop": 0,
    "horizontal_flip": 1,
    "color_jitter": 9,
    "grayscale": 1,
    "gaussian_blur": 2,
    "solarize": 1,
    "color_space": 0,
    "learned_flow": 0,
}
SIZE_OPS = ("random_resized_crop", "resize", "center_crop", "jigsaw")
# Ops that only move pixels or pad with 0: they commute exactly with the final uint8 quantisation,
# so trailing ones run on uint8 (a quarter of the bytes).
PIXEL_OPS = ("horizontal_flip", "center_crop", "jigsaw")
# Ops whose output is not an image in [0, 1] (normalised colour spaces): last in a recipe, never
# quantised to uint8; the input pipeline leaves them to the device, where they replace `normalize`.
FLOAT_OPS = ("color_space", "learned_flow")
# Ops that run on the host (`host/`); `device/recipe.apply_recipe` skips them. With
# `config.data.device_ops` only these run on the host, `device/` runs the others.
HOST_OPS = ("random_resized_crop", "resize", "center_crop", "horizontal_flip", "jigsaw")
# Ops with no `device/colour.DEVICE_OPS` version: a recipe with one cannot use `data.device_ops`.
HOST_ONLY_OPS = ("rand_augment",)
LUMA = (0.299, 0.587, 0.114)  # ITU-R 601-2 luma weights (grayscale, saturation, contrast)


def op_kwargs(op: Mapping[str, Any]) -> dict[str, Any]:
    """Op dict (or ConfigDict) → keyword arguments, lists turned into tuples."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in op.items() if k != "op"}


def size_pair(size: int | Sequence[int]) -> tuple[int, int]:
    """An op's `size` (int: square) as `(h, w)`."""
    if isinstance(size, int):
        return size, size
    h, w = size
    return int(h), int(w)


def blur_kernel_size(side: int) -> int:
    """`gaussian_blur`'s `kernel_size` 0: the odd number nearest to 10% of `side`, at least 3 (23 at
    224 px, 3 at 32 px)."""
    return max(3, 2 * round((0.1 * side - 1) / 2) + 1)


def jigsaw_cells(height: int, width: int, grid: int, patch: int) -> tuple[int, int]:
    """The jigsaw op (PIRL / PyContrast `JigsawCrop`) cuts an image into `grid × grid` cells of
    `side // grid` px (85 at 255) and takes one `patch × patch` crop at a uniform integer offset
    in each (`randint(0, cell − patch + 1)` per axis; `u [N, 2·grid²]`: row offsets, then column
    offsets, cell by cell in row-major order), laid out as a `[grid·patch, grid·patch, C]` mosaic,
    cell (i, j) at block (i, j): the model cuts it back into `grid²` patches. Returns the cell's
    `(height, width)`; ValueError when the patch does not fit in it."""
    cell_h, cell_w = height // grid, width // grid
    if patch > min(cell_h, cell_w):
        raise ValueError(
            f"jigsaw: patch={patch} is larger than the {cell_h}×{cell_w} cells of a "
            f"{height}×{width} image in a {grid}×{grid} grid."
        )
    return cell_h, cell_w


def fill_values(fill: int | Sequence[int], channels: int) -> tuple[int, ...]:
    """RandAugment's `fill` as `channels` values; a 3-value fill on 1 channel is its rounded
    ITU-R 601-2 luma (117 for the ImageNet mean)."""
    values = (fill,) * channels if isinstance(fill, int) else tuple(fill)
    if channels == 1 and len(values) == 3:
        values = (int(LUMA[0] * values[0] + LUMA[1] * values[1] + LUMA[2] * values[2] + 0.5),)
    if len(values) != channels:
        raise ValueError(f"fill={fill!r} does not match {channels} channels.")
    return values


def in_table_order(ops: Mapping[str, Any]) -> dict[str, Any]:
    """A twin's op name → function dict in `OP_KEYS`' order (the order error messages list)."""
    return {name: ops[name] for name in OP_KEYS if name in ops}


def rand_augment_ops(implementations: Mapping[str, Callable]) -> dict[str, Callable]:
    """RandAugment op name → a twin's function for it, `implementations[RAND_AUGMENT[name].fn]`
    (a twin passes its module's namespace), in the table's order."""
    return {name: implementations[op.fn] for name, op in RAND_AUGMENT.items()}


def check_uniforms(shape: Sequence[int | None], num_ops: int) -> None:
    """A twin's `op_params`: ValueError unless the uniforms' `shape` is `[N, DRAWS_PER_OP·num_ops]`
    (a last dimension unknown to tf passes)."""
    if shape[-1] is not None and shape[-1] != DRAWS_PER_OP * num_ops:
        raise ValueError(
            f"{num_ops} RandAugment ops read {DRAWS_PER_OP * num_ops} uniforms, got {shape}."
        )


def op_draws(op: Mapping[str, Any]) -> int:
    """Uniforms one op dict reads."""
    if op["op"] == "rand_augment":
        return DRAWS_PER_OP * int(op.get("num_ops", 2))
    if op["op"] == "jigsaw":
        return 2 * int(op["grid"]) ** 2
    return NUM_DRAWS[op["op"]]


def num_draws(recipe: Sequence[Mapping[str, Any]]) -> int:
    """Uniforms per example that `recipe` reads."""
    return sum(op_draws(op) for op in recipe)


def validate_recipe(name: str, recipe: Sequence[Mapping[str, Any]], channels: int) -> None:
    """Raise ValueError naming the recipe and op for unknown ops / keys, bad values, colour ops
    (saturation, hue, grayscale, color_space) on 1-channel views, or a `color_space` that is not the
    last op (`configs.ConfigError`, a ValueError, for the colour space's own options)."""
    if isinstance(recipe, (str, bytes)) or not isinstance(recipe, Sequence):
        raise ValueError(
            f"recipe {name!r} must be a sequence of op dicts, got {type(recipe).__name__}."
        )
    for k, op in enumerate(recipe):
        where = f"recipe {name!r} op {k}"
        if not hasattr(op, "keys") or "op" not in op:
            raise ValueError(f"{where}: expected a dict with an 'op' key, got {op!r}.")
        kind = op["op"]
        if kind not in OP_KEYS:
            raise ValueError(f"{where}: unknown op {kind!r}; allowed: {tuple(OP_KEYS)}.")
        where = f"{where} ({kind})"
        required, optional = OP_KEYS[kind]
        params = op_kwargs(op)
        missing = required - set(params)
        unknown = set(params) - required - optional
        if missing:
            raise ValueError(f"{where}: missing {sorted(missing)}.")
        if unknown:
            raise ValueError(
                f"{where}: unknown keys {sorted(unknown)}; allowed {sorted(required | optional)}."
            )

        def check(ok: bool, message: str, where: str = where) -> None:
            if not ok:
                raise ValueError(f"{where}: {message}")

        if "p" in params:
            check(0.0 <= params["p"] <= 1.0, f"p={params['p']} must be in [0, 1].")
        if "size" in params:
            size = params["size"]
            sizes = (size,) if isinstance(size, int) else tuple(size)
            check(
                len(sizes) in (1, 2) and all(isinstance(s, int) and s > 0 for s in sizes),
                f"size={size!r} must be a positive int or a pair of them.",
            )
        if kind == "random_resized_crop":
            lo, hi = params.get("scale", (0.08, 1.0))
            check(0.0 < lo <= hi <= 1.0, f"scale={(lo, hi)} must satisfy 0 < lo <= hi <= 1.")
            lo, hi = params.get("ratio", (3 / 4, 4 / 3))
            check(0.0 < lo <= hi, f"ratio={(lo, hi)} must satisfy 0 < lo <= hi.")
        if kind == "color_jitter":
            for key in ("brightness", "contrast", "saturation"):
                check(params.get(key, 0.0) >= 0.0, f"{key} must be >= 0.")
            check(0.0 <= params.get("hue", 0.0) <= 0.5, "hue must be in [0, 0.5].")
            if channels != 3:
                for key in ("saturation", "hue"):
                    check(
                        not params.get(key, 0.0),
                        f"{key}={params.get(key)} needs 3 channels but "
                        f"config.data.channels == {channels}; set it to 0 or use channels=3.",
                    )
        if kind == "grayscale":
            check(channels == 3, f"needs 3 channels but config.data.channels == {channels}.")
        if kind == "gaussian_blur":
            lo, hi = params["sigma"]
            check(0.0 < lo <= hi, f"sigma={(lo, hi)} must satisfy 0 < lo <= hi.")
            ks = params.get("kernel_size", 0)
            check(
                isinstance(ks, int) and (ks == 0 or (ks > 0 and ks % 2 == 1)),
                f"kernel_size={ks} must be 0 (auto) or a positive odd int.",
            )
        if kind == "solarize":
            check(0.0 <= params["threshold"] <= 1.0, "threshold must be in [0, 1] pixel units.")
        if kind == "rand_augment":
            _check_rand_augment(check, params, channels)
        if kind == "jigsaw":
            for key in ("grid", "patch"):
                value = params[key]
                check(
                    isinstance(value, int) and not isinstance(value, bool) and value > 0,
                    f"{key}={value!r} must be a positive int.",
                )
        if kind == "color_space":
            _check_color_space(where, params, channels, last=k == len(recipe) - 1)
        if kind == "learned_flow":
            _check_learned_flow(where, params, channels, last=k == len(recipe) - 1)


def _check_rand_augment(check: Callable[..., None], params: Mapping[str, Any], channels: int):
    num_ops = params.get("num_ops", 2)
    check(
        isinstance(num_ops, int) and not isinstance(num_ops, bool) and num_ops >= 1,
        f"num_ops={num_ops!r} must be a positive int.",
    )
    magnitude = params.get("magnitude", 10.0)
    check(
        isinstance(magnitude, (int, float)) and 0.0 <= magnitude <= MAX_LEVEL,
        f"magnitude={magnitude!r} must be a number in [0, {MAX_LEVEL:g}].",
    )
    std = params.get("magnitude_std", 0.5)
    check(isinstance(std, (int, float)) and std >= 0.0, f"magnitude_std={std!r} must be >= 0.")
    ops = params.get("ops")
    if ops is not None:
        check(
            not isinstance(ops, (str, bytes)) and len(tuple(ops)) > 0,
            f"ops={ops!r} must be a non-empty sequence of op names (or None for all 15).",
        )
        unknown = [name for name in ops if name not in RAND_AUGMENT_OPS]
        check(not unknown, f"unknown RandAugment ops {unknown}; allowed: {RAND_AUGMENT_OPS}.")
    fill = params.get("fill", IMAGENET_FILL)
    values = (fill,) if isinstance(fill, int) else tuple(fill)
    check(
        all(isinstance(v, int) and 0 <= v <= 255 for v in values)
        and (isinstance(fill, int) or len(values) == channels or (channels, len(values)) == (1, 3)),
        f"fill={fill!r} must be an int in [0, 255] or {channels} of them (3 on 1 channel: luma).",
    )
    check(isinstance(params.get("increasing", False), bool), "increasing must be a bool.")


def _check_learned_flow(where: str, params: Mapping[str, Any], channels: int, last: bool) -> None:
    """InfoMin's learned colour space (`device/colour.learned_flow`): the file exists, RGB input,
    last op."""
    if not os.path.isfile(str(params["path"])):
        raise ConfigError(
            f"{where}: path={params['path']!r} is not a file; write one with "
            "`python -m ssl_jax.view_learning --config=... --workdir=DIR` (DIR/flow.npz)."
        )
    _check_float_op(where, channels, last)


def _check_color_space(where: str, params: Mapping[str, Any], channels: int, last: bool) -> None:
    if params["space"] not in color.SPACES:
        raise ConfigError(f"{where}: space={params['space']!r}; allowed: {tuple(color.SPACES)}.")
    _check_float_op(where, channels, last)


def _check_float_op(where: str, channels: int, last: bool) -> None:
    if channels != 3:
        raise ConfigError(
            f"{where}: converts RGB, but config.data.channels == {channels}; use channels=3."
        )
    if not last:
        raise ConfigError(
            f"{where}: gives normalised float channels, so it must be the recipe's last op."
        )
