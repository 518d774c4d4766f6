"""Image ops that run on the accelerator inside the jitted step (jnp only).

The host pipeline hands over uint8 crops; normalisation (and, per config, the colour ops of a
recipe) happen here so the host-to-device copy stays uint8. SCE's official pipeline does the same:
colour jitter, grayscale, blur and solarize on the GPU (Kornia), crops and flips on the CPU.

The colour ops take float images in [0, 1], `[N, H, W, C]`, and a key; every example gets its own
key (`jax.random.split(rng, N)` + `vmap`), so every example draws its own apply/skip decision and
its own factors, as a torchvision transform applied image by image would. They keep torchvision's
semantics and the host ops' (`augment.py`) conventions, so a recipe means the same on either side:

- `color_jitter`: `RandomApply([ColorJitter(b, c, s, h)], p)`; factors ~ U[max(0, 1 − b), 1 + b]
  (contrast, saturation alike), hue shift ~ U[−h, h], the four applied in a per-example random order
  (`randperm(4)`), each clamped to [0, 1]; a component given as 0 is skipped.
- `grayscale`: `RandomGrayscale(p)` with ITU-R 601-2 luma (0.299, 0.587, 0.114) — PIL's and
  `augment.py`'s weights (torchvision's tensor path rounds the red one to 0.2989).
- `gaussian_blur`: `RandomApply([GaussianBlur(kernel_size, sigma)], p)`, per-example σ, separable,
  reflect padding; `kernel_size` 0 = the odd number nearest to 10% of the shorter side, at least 3.
- `solarize`: `RandomSolarize(threshold, p)`: `x → 1 − x` where `x >= threshold`.
- `color_space`: CMC's colour transfer + `Normalize` (`color.convert`): RGB → Lab / YCbCr / YDbDr
  normalised with the official mean/std, in place of `config.data.mean/std`; a recipe's last op.
  Without `device_ops` the host runs the rest of the recipe and `to_model_input` runs this op.

`device_crop_side` / `check_device_crops`: whether the views are cut here from canvases
(`data.device_crops`), and which recipes allow it.

The random choices are computed for every example and selected with masks (no data-dependent
control flow), so each op costs the same whatever it draws.
"""

import functools
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import ml_collections

from ssl_jax.config_checks import ConfigError, check_range
from ssl_jax.data import color, recipe_ops
from ssl_jax.data.recipe_ops import FLOAT_OPS, HOST_OPS, LUMA


def _standardize(x: jnp.ndarray, mean: Sequence[float], std: Sequence[float], dtype) -> jnp.ndarray:
    x = (x - jnp.asarray(mean, jnp.float32)) / jnp.asarray(std, jnp.float32)
    return x.astype(dtype)


def normalize(
    images: jnp.ndarray, mean: Sequence[float], std: Sequence[float], dtype=jnp.float32
) -> jnp.ndarray:
    """uint8 `[N, H, W, C]` → `(x/255 − mean)/std` in `dtype`; mean/std in [0, 1] pixel units."""
    return _standardize(images.astype(jnp.float32) / 255.0, mean, std, dtype)


# --------------------------------------------------------------------------------------------------
# Helpers (single image `[H, W, C]`, float32)
# --------------------------------------------------------------------------------------------------


def _apply_with_p(u: jnp.ndarray, p: float, applied: jnp.ndarray, original: jnp.ndarray):
    """torchvision `RandomApply` with the uniform draw `u`: `applied` when `u < p`."""
    return jnp.where(u < p, applied, original)


def _needs_colour(images: jnp.ndarray, what: str) -> None:
    if images.shape[-1] != 3:
        raise ValueError(f"{what} needs 3-channel images, got shape {images.shape}.")


def _gray(x: jnp.ndarray) -> jnp.ndarray:
    """Luma `[H, W, 1]`; the image itself when it has one channel."""
    if x.shape[-1] == 1:
        return x
    return jnp.einsum("hwc,c->hw", x, jnp.asarray(LUMA, x.dtype))[..., None]


def _blend(x: jnp.ndarray, other: jnp.ndarray, factor: jnp.ndarray) -> jnp.ndarray:
    """torchvision `_blend`: `clamp(factor·x + (1 − factor)·other, 0, 1)`."""
    return jnp.clip(factor * x + (1.0 - factor) * other, 0.0, 1.0)


def adjust_brightness(x: jnp.ndarray, factor: jnp.ndarray) -> jnp.ndarray:
    return _blend(x, jnp.zeros_like(x), factor)


def adjust_contrast(x: jnp.ndarray, factor: jnp.ndarray) -> jnp.ndarray:
    return _blend(x, jnp.mean(_gray(x)), factor)


def adjust_saturation(x: jnp.ndarray, factor: jnp.ndarray) -> jnp.ndarray:
    return _blend(x, _gray(x), factor)


def rgb_to_hsv(x: jnp.ndarray) -> jnp.ndarray:
    """torchvision `_rgb2hsv` on `[..., 3]` (h in [0, 1))."""
    r, g, b = x[..., 0], x[..., 1], x[..., 2]
    maxc = jnp.max(x, axis=-1)
    minc = jnp.min(x, axis=-1)
    eqc = maxc == minc
    cr = maxc - minc
    s = cr / jnp.where(eqc, 1.0, maxc)
    cr_divisor = jnp.where(eqc, 1.0, cr)
    rc = (maxc - r) / cr_divisor
    gc = (maxc - g) / cr_divisor
    bc = (maxc - b) / cr_divisor
    hr = jnp.where(maxc == r, bc - gc, 0.0)
    hg = jnp.where((maxc == g) & (maxc != r), 2.0 + rc - bc, 0.0)
    hb = jnp.where((maxc != g) & (maxc != r), 4.0 + gc - rc, 0.0)
    h = jnp.mod(((hr + hg + hb) / 6.0 + 1.0), 1.0)
    return jnp.stack([h, s, maxc], axis=-1)


def hsv_to_rgb(x: jnp.ndarray) -> jnp.ndarray:
    """torchvision `_hsv2rgb` on `[..., 3]`."""
    h, s, v = x[..., 0], x[..., 1], x[..., 2]
    i = jnp.floor(h * 6.0)
    f = h * 6.0 - i
    i = i.astype(jnp.int32) % 6
    p = jnp.clip(v * (1.0 - s), 0.0, 1.0)
    q = jnp.clip(v * (1.0 - s * f), 0.0, 1.0)
    t = jnp.clip(v * (1.0 - s * (1.0 - f)), 0.0, 1.0)
    sector = [i == k for k in range(6)]
    r = jnp.select(sector, [v, q, p, p, t, v])
    g = jnp.select(sector, [t, v, v, q, p, p])
    b = jnp.select(sector, [p, p, t, v, v, q])
    return jnp.stack([r, g, b], axis=-1)


def adjust_hue(x: jnp.ndarray, delta: jnp.ndarray) -> jnp.ndarray:
    """torchvision `adjust_hue`: rotate h by `delta` (in turns) in HSV."""
    hsv = rgb_to_hsv(x)
    hsv = hsv.at[..., 0].set(jnp.mod(hsv[..., 0] + delta, 1.0))
    return jnp.clip(hsv_to_rgb(hsv), 0.0, 1.0)


def blur_kernel_size(side: int) -> int:
    """Odd number nearest to 10% of `side`, at least 3 (23 at 224 px, 3 at 32 px)."""
    return max(3, 2 * round((0.1 * side - 1) / 2) + 1)


def gaussian_kernel1d(sigma: jnp.ndarray, kernel_size: int) -> jnp.ndarray:
    """torchvision `_get_gaussian_kernel1d`: `exp(−x²/2σ²)` on `kernel_size` taps, sums to 1."""
    half = (kernel_size - 1) * 0.5
    x = jnp.linspace(-half, half, kernel_size)
    kernel = jnp.exp(-0.5 * jnp.square(x / sigma))
    return kernel / jnp.sum(kernel)


def blur(x: jnp.ndarray, kernel1d: jnp.ndarray) -> jnp.ndarray:
    """Separable blur of `[H, W, C]` with reflect padding (torch `reflect`), same size out."""
    size = kernel1d.shape[0]
    r = size // 2
    height, width = x.shape[:2]
    xp = jnp.pad(x, ((r, r), (r, r), (0, 0)), mode="reflect")
    rows = sum(kernel1d[i] * xp[i : i + height] for i in range(size))
    return sum(kernel1d[j] * rows[:, j : j + width] for j in range(size))


# --------------------------------------------------------------------------------------------------
# Random ops on batches `[N, H, W, C]`
# --------------------------------------------------------------------------------------------------


def _factor_range(value: float | Sequence[float], name: str) -> tuple[float, float] | None:
    """torchvision `ColorJitter._check_input` for brightness/contrast/saturation; None = skipped."""
    if isinstance(value, (int, float)):
        if value < 0:
            raise ValueError(f"color_jitter {name}={value} must be >= 0.")
        lo, hi = max(0.0, 1.0 - value), 1.0 + value
    else:
        lo, hi = (float(v) for v in value)
    if not 0.0 <= lo <= hi:
        raise ValueError(f"color_jitter {name}={value!r}: need 0 <= min <= max.")
    return None if lo == hi == 1.0 else (lo, hi)


def _hue_range(value: float | Sequence[float]) -> tuple[float, float] | None:
    lo, hi = (-value, value) if isinstance(value, (int, float)) else (float(v) for v in value)
    if not -0.5 <= lo <= hi <= 0.5:
        raise ValueError(f"color_jitter hue={value!r} must lie in [-0.5, 0.5].")
    return None if lo == hi == 0.0 else (lo, hi)


def _jitter_u(
    x: jnp.ndarray,
    u: jnp.ndarray,
    p: float = 1.0,
    brightness: float | Sequence[float] = 0.0,
    contrast: float | Sequence[float] = 0.0,
    saturation: float | Sequence[float] = 0.0,
    hue: float | Sequence[float] = 0.0,
) -> jnp.ndarray:
    """`color_jitter` on float `[N, H, W, C]` with the host's uniforms `u [N, 9]` (`augment.py`'s
    layout: apply, the four factors, four keys whose argsort is the order)."""
    ranges = (
        _factor_range(brightness, "brightness"),
        _factor_range(contrast, "contrast"),
        _factor_range(saturation, "saturation"),
        _hue_range(hue),
    )
    if ranges[2] is not None or ranges[3] is not None:
        _needs_colour(x, "color_jitter saturation/hue")
    if all(r is None for r in ranges):
        return x
    adjust = (adjust_brightness, adjust_contrast, adjust_saturation, adjust_hue)

    def one(image, v):
        # a uniform random permutation of the four adjustments, as torchvision's randperm(4)
        order = jnp.argsort(v[5:9])
        branches = []
        for k, (fn, bounds) in enumerate(zip(adjust, ranges)):
            if bounds is None:
                branches.append(lambda y: y)
            else:
                factor = bounds[0] + (bounds[1] - bounds[0]) * v[1 + k]
                branches.append(lambda y, fn=fn, factor=factor: fn(y, factor))
        # Four slots (a fori_loop, so the slot compiles once); slot s applies adjustment order[s].
        y = jax.lax.fori_loop(0, 4, lambda s, y: jax.lax.switch(order[s], branches, y), image)
        return _apply_with_p(v[0], p, y, image)

    return jax.vmap(one)(x, u)


def _grayscale_u(x: jnp.ndarray, u: jnp.ndarray, p: float) -> jnp.ndarray:
    _needs_colour(x, "grayscale")
    gray = jnp.broadcast_to(jax.vmap(_gray)(x), x.shape)
    return jnp.where(u[:, 0, None, None, None] < p, gray, x)


def _blur_u(
    x: jnp.ndarray,
    u: jnp.ndarray,
    p: float,
    sigma: Sequence[float] = (0.1, 2.0),
    kernel_size: int = 0,
) -> jnp.ndarray:
    height, width = x.shape[1:3]
    kernel_size = kernel_size or blur_kernel_size(min(height, width))
    if kernel_size % 2 != 1 or kernel_size // 2 >= min(height, width):
        raise ValueError(
            f"gaussian_blur kernel_size={kernel_size} must be odd and its radius smaller than the "
            f"image side ({height}×{width})."
        )
    lo, hi = sigma

    def one(image, v):
        kernel = gaussian_kernel1d(lo + (hi - lo) * v[1], kernel_size)
        return _apply_with_p(v[0], p, blur(image, kernel), image)

    return jax.vmap(one)(x, u)


def _solarize_u(x: jnp.ndarray, u: jnp.ndarray, p: float, threshold: float = 0.5) -> jnp.ndarray:
    flip = (u[:, 0, None, None, None] < p) & (x >= threshold)
    return jnp.where(flip, 1.0 - x, x)


def _draw_and_apply(name: str, fn: Callable[..., jnp.ndarray]) -> Callable[..., jnp.ndarray]:
    """The key-driven op of the `device_ops` path: the host's uniforms drawn per example from
    `rng`, then `fn`; keeps the dtype."""

    def op(images: jnp.ndarray, rng: jax.Array, *args, **params) -> jnp.ndarray:
        u = jax.random.uniform(rng, (images.shape[0], recipe_ops.NUM_DRAWS[name]))
        return fn(images.astype(jnp.float32), u, *args, **params).astype(images.dtype)

    op.__name__ = name
    op.__signature__ = inspect.Signature(
        [
            inspect.Parameter("images", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("rng", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            *list(inspect.signature(fn).parameters.values())[2:],
        ]
    )
    return op


color_jitter = _draw_and_apply("color_jitter", _jitter_u)
color_jitter.__doc__ = """`RandomApply([ColorJitter(brightness, contrast, saturation, hue)], p)` per example.

Amounts as torchvision: a float `b` means a factor ~ U[max(0, 1 − b), 1 + b] (hue: a shift
~ U[−h, h] turns), a pair is the range itself; 0 skips the component. The order of the four
adjustments is a per-example random permutation (the argsort of four uniforms, as the host),
realised as four slots that each pick one adjustment with `lax.switch` — under `vmap` a masked
select, so every slot evaluates the four adjustments. `images` float `[N, H, W, C]` in [0, 1]
(C = 3 for saturation or hue), one key for the batch; returns the input dtype."""
grayscale = _draw_and_apply("grayscale", _grayscale_u)
grayscale.__doc__ = "`RandomGrayscale(p)`: the luma copied into all 3 channels, per example."
gaussian_blur = _draw_and_apply("gaussian_blur", _blur_u)
gaussian_blur.__doc__ = """`RandomApply([GaussianBlur(kernel_size, sigma)], p)`: σ ~ U[sigma] per
example. `kernel_size` must be odd; 0 = `blur_kernel_size(min(H, W))`. Reflect padding needs
`kernel_size // 2 < min(H, W)`."""
solarize = _draw_and_apply("solarize", _solarize_u)
solarize.__doc__ = (
    "`RandomSolarize(threshold, p)` on [0, 1] images: `x → 1 − x` where `x >= threshold`."
)


def color_space(images: jnp.ndarray, rng: jax.Array, space: str) -> jnp.ndarray:
    """RGB `[N, H, W, 3]` in [0, 1] → `space`, normalised (`color.convert`); deterministic."""
    del rng
    _needs_colour(images, "color_space")
    return color.convert(images, space)


def learned_flow(images: jnp.ndarray, rng: jax.Array, path: str) -> jnp.ndarray:
    """RGB `[N, H, W, 3]` in [0, 1] → InfoMin's learned colour space: the frozen view generator g
    that `view_learning.learn_views` saved at `path`, applied to its input space and standardised
    per channel (`flow_views.apply_flow`); deterministic. Split like a colour space: 1 | 2."""
    del rng
    _needs_colour(images, "learned_flow")
    from ssl_jax.data import flow_views  # flax's flow loads only where a recipe has the op

    return flow_views.apply_flow(flow_views.load_flow(path), images)


DEVICE_OPS: dict[str, Callable[..., jnp.ndarray]] = {
    "color_jitter": color_jitter,
    "grayscale": grayscale,
    "gaussian_blur": gaussian_blur,
    "solarize": solarize,
    "color_space": color_space,
    "learned_flow": learned_flow,
}


def _op_params(index: int, op: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """Op dict (or ConfigDict) → (name, keyword arguments); unknown ops/keys raise ValueError."""
    items = dict(op.items())
    name = items.pop("op", None)
    if name not in DEVICE_OPS and name not in HOST_OPS:
        raise ValueError(
            f"recipe op {index}: unknown op {name!r}; allowed: {tuple(DEVICE_OPS) + HOST_OPS}."
        )
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in items.items()}
    if name in DEVICE_OPS:
        signature = inspect.signature(DEVICE_OPS[name]).parameters
        allowed = set(signature) - {"images", "rng"}
        required = {k for k in allowed if signature[k].default is inspect.Parameter.empty}
        unknown, missing = set(params) - allowed, required - set(params)
        if unknown or missing:
            raise ValueError(
                f"recipe op {index} ({name}): unknown keys {sorted(unknown)}, "
                f"missing keys {sorted(missing)}; allowed {sorted(allowed)}."
            )
    return name, params


def apply_recipe(
    images: jnp.ndarray,
    ops: Sequence[Mapping[str, Any]],
    rng: jax.Array,
    mean: Sequence[float],
    std: Sequence[float],
    dtype=jnp.float32,
) -> jnp.ndarray:
    """The colour ops of a recipe, in recipe order, then `normalize` (unless the recipe ends with
    a `color_space` op, whose own normalisation replaces `mean` / `std`).

    Geometric ops (`HOST_OPS`: crops, resize, flips) are skipped: they already ran on the host. Op
    `k` draws from `fold_in(rng, k)` (`k` = its index in the recipe).

    Args:
      images: uint8 `[N, H, W, C]` host crops.
      ops: the recipe, a tuple of op dicts such as
        `{'op': 'color_jitter', 'p': 0.8, 'brightness': 0.4, ...}`, `{'op': 'grayscale', 'p': 0.2}`,
        `{'op': 'gaussian_blur', 'p': 0.5, 'sigma': (0.1, 2.0), 'kernel_size': 23}`,
        `{'op': 'solarize', 'p': 0.2, 'threshold': 0.5}`.
      rng: key for this view's batch.
      mean, std: per channel, [0, 1] pixel units.
      dtype: output dtype.

    Returns:
      normalised `[N, H, W, C]` in `dtype`.
    """
    x = images.astype(jnp.float32) / 255.0
    normalized = False
    for k, op in enumerate(ops):
        name, params = _op_params(k, op)
        if name in DEVICE_OPS:
            x = DEVICE_OPS[name](x, jax.random.fold_in(rng, k), **params)
            normalized = name in FLOAT_OPS
    return x.astype(dtype) if normalized else _standardize(x, mean, std, dtype)


def to_model_input(
    images: jnp.ndarray,
    ops: Sequence[Mapping[str, Any]],
    mean: Sequence[float],
    std: Sequence[float],
    dtype=jnp.float32,
) -> jnp.ndarray:
    """uint8 views whose recipe `ops` already ran on the host → model input: the recipe's trailing
    `color_space` op when it has one (`[N, H, W, 3]` in that space, normalised), else `normalize`
    with `mean` / `std`."""
    if ops and ops[-1]["op"] in FLOAT_OPS:
        return apply_recipe(images, ops[-1:], jax.random.PRNGKey(0), mean, std, dtype)
    return normalize(images, mean, std, dtype)


def model_views(
    views: Sequence[jnp.ndarray],
    recipes: Sequence[Sequence[Mapping[str, Any]]],
    rng: jax.Array,
    mean: Sequence[float],
    std: Sequence[float],
    dtype,
    *,
    colour_ops: bool,
) -> tuple[jnp.ndarray, ...]:
    """uint8 views `[N, h_v, w_v, C]` that the host cropped (or `cut_views` cut) → model input in
    `dtype`: with `colour_ops` the colour ops of view `v`'s recipe run here with key
    `fold_in(rng, v)` (`apply_recipe`); without, the host ran them and only a trailing
    `color_space` op or the normalisation runs (`to_model_input`)."""
    if colour_ops:
        return tuple(
            apply_recipe(x, recipe, jax.random.fold_in(rng, v), mean, std, dtype)
            for v, (x, recipe) in enumerate(zip(views, recipes))
        )
    return tuple(to_model_input(x, recipe, mean, std, dtype) for x, recipe in zip(views, recipes))


def resample_matrix(
    start: jnp.ndarray, length: jnp.ndarray, in_size: int, out_size: int, antialias: bool
) -> jnp.ndarray:
    """`[N, out_size, in_size]` weights resizing pixels `[start, start + length)` to `out_size`: the
    host's `augment.resample_matrix` (triangle kernel at half-pixel centres, widened by the
    downscaling factor when `antialias`, restricted to the crop, normalised)."""
    start = start.astype(jnp.float32)[:, None, None]
    length = length.astype(jnp.float32)[:, None, None]
    step = length / out_size
    support = jnp.maximum(step, 1.0) if antialias else jnp.ones_like(step)
    centre = start + (jnp.arange(out_size, dtype=jnp.float32)[None, :, None] + 0.5) * step
    pixel = jnp.arange(in_size, dtype=jnp.float32)[None, None, :]
    weight = jnp.maximum(0.0, 1.0 - jnp.abs(pixel + 0.5 - centre) / support)
    weight = weight * ((pixel >= start) & (pixel < start + length))
    return weight / jnp.sum(weight, axis=-1, keepdims=True)


def cut_views(
    canvas: jnp.ndarray,
    boxes: jnp.ndarray,
    flips: jnp.ndarray,
    recipes: Sequence[Sequence[Mapping[str, Any]]],
) -> tuple[jnp.ndarray, ...]:
    """`data.device_crops`: every view's `random_resized_crop` and flips, cut on the device from the
    images the host decoded once (`augment.fit_canvas`, `augment.crop_and_flip`).

    Args:
      canvas: uint8 `[N, S, S, C]`, each image at the top left of its canvas.
      boxes: int32 `[N, V, 4]`, each view's crop `(top, left, height, width)` in canvas pixels.
      flips: bool `[N, V]`, whether each view is mirrored.
      recipes: each view's recipe; its leading `random_resized_crop` gives the size and antialias.

    Returns:
      V uint8 views `[N, h_v, w_v, C]`: the host's views (`augment.apply_recipe` of the geometric
      ops) up to the rounding of the separable resize (a grey level at most).
    """
    geometry = []
    for recipe in recipes:
        size = recipe[0]["size"]
        out_hw = (size, size) if isinstance(size, int) else tuple(size)
        geometry.append((*map(int, out_hw), bool(recipe[0].get("antialias", True))))
    return _cut(canvas, boxes, flips, tuple(geometry))


@functools.partial(jax.jit, static_argnums=3)
def _cut(canvas, boxes, flips, geometry: tuple[tuple[int, int, bool], ...]):
    """`cut_views` for each view's `(out_h, out_w, antialias)`; jitted, so a call outside a step
    (view learning, view studies, pictures) runs as one program, not op by op."""
    x = canvas.astype(jnp.float32)
    out = []
    for v, (out_h, out_w, antialias) in enumerate(geometry):
        box = (boxes[:, v, k] for k in range(4))
        y = _resample(x, *box, (out_h, out_w), antialias)
        y = jnp.round(jnp.clip(y, 0.0, 255.0)).astype(jnp.uint8)
        out.append(jnp.where(flips[:, v, None, None, None], y[:, :, ::-1], y))
    return tuple(out)


def batch_views(data_config, batch: Mapping[str, Any]) -> tuple[jnp.ndarray, ...]:
    """The uint8 views of a pipeline batch: the host's, or (`data.device_crops`) cut here from its
    canvases with each view's recipe."""
    if "views" in batch:
        return tuple(batch["views"])
    recipes = tuple(tuple(dict(op) for op in data_config.recipes[v]) for v in data_config.views)
    return cut_views(batch["canvas"], batch["boxes"], batch["flips"], recipes)


def eval_ops(data_config) -> tuple[dict, ...]:
    """The part of the training recipes that evaluation applies too: the trailing normalising op
    (`color_space`) of the first view's recipe, else nothing (`data.mean` / `data.std`). A model
    pretrained on CMC's Lab views reads Lab at evaluation (kNN, probe, `load_encoder`)."""
    views = tuple(data_config.get("views", ()) or ())
    recipes = data_config.get("recipes", None)
    if not views or recipes is None or views[0] not in recipes:
        return ()
    ops = tuple(dict(op) for op in recipes[views[0]])
    return ops[-1:] if ops and ops[-1]["op"] in FLOAT_OPS else ()


def eval_input(images: jnp.ndarray, data_config, dtype=jnp.float32) -> jnp.ndarray:
    """uint8 eval images `[N, H, W, C]` → model input as in pretraining: the run's colour space
    (`eval_ops`) or `normalize` with `data.mean` / `data.std`."""
    mean, std = tuple(data_config.mean), tuple(data_config.std)
    return to_model_input(images, eval_ops(data_config), mean, std, dtype)


# --------------------------------------------------------------------------------------------------
# The whole recipe on the device (`config.data.pipeline = 'device'`)
#
# Every op reads the host's uniforms (`recipe_ops`: op k reads its own columns of `u [N, D]`), so a
# view here is the host's view (`augment.apply_ops_uint8`) for the same `u`, up to float rounding
# (float32 here, float64 in the host's crop sampler): `recipe_view` is checked against it.
# --------------------------------------------------------------------------------------------------


def rrc_params(
    u: jnp.ndarray, height: int, width: int, scale: Sequence[float], ratio: Sequence[float]
) -> tuple[jnp.ndarray, jnp.ndarray, jnp.ndarray, jnp.ndarray]:
    """`(top, left, h, w)`, each int32 `[N]`, from `u [N, 22]`: torchvision's
    `RandomResizedCrop.get_params` (10 attempts, area ~ U[scale]·area, log-uniform ratio, `round`
    half to even, the first attempt that fits, else the whole image with its ratio clamped into
    `ratio`, centred), as `augment.rrc_params` on the host."""
    attempts = recipe_ops.RRC_ATTEMPTS
    area = float(height * width)
    target_area = area * (scale[0] + (scale[1] - scale[0]) * u[:, :attempts])
    lo, hi = math.log(ratio[0]), math.log(ratio[1])
    aspect = jnp.exp(lo + (hi - lo) * u[:, attempts : 2 * attempts])
    w = jnp.round(jnp.sqrt(target_area * aspect))  # jnp.round: half to even, as Python's round
    h = jnp.round(jnp.sqrt(target_area / aspect))
    ok = (w > 0) & (h > 0) & (w <= width) & (h <= height)
    first = jnp.argmax(ok, axis=1)[:, None]  # the first attempt that fits
    h = jnp.take_along_axis(h, first, axis=1)[:, 0]
    w = jnp.take_along_axis(w, first, axis=1)[:, 0]
    # torch.randint(0, H - h + 1): a uniform integer in [0, H - h]
    top = jnp.minimum(jnp.floor(u[:, 2 * attempts] * (height - h + 1)), height - h)
    left = jnp.minimum(jnp.floor(u[:, 2 * attempts + 1] * (width - w + 1)), width - w)
    in_ratio = width / height  # the fallback is static: the whole image, ratio clamped, centred
    fb_w = round(height * ratio[1]) if in_ratio > ratio[1] else width
    fb_h = round(width / ratio[0]) if in_ratio < ratio[0] else height
    fallback = ((height - fb_h) // 2, (width - fb_w) // 2, fb_h, fb_w)
    found = jnp.any(ok, axis=1)
    return tuple(  # type: ignore[return-value]
        jnp.where(found, v, fb).astype(jnp.int32) for v, fb in zip((top, left, h, w), fallback)
    )


def _resample(x, top, left, height, width, out_hw: tuple[int, int], antialias: bool):
    """Float `[N, H, W, C]` → `[N, out_h, out_w, C]`: each example's box `(top, left, height,
    width)` resized (the host's resampling matrices, two batched products in f32)."""
    side_h, side_w = x.shape[1:3]
    hi = jax.lax.Precision.HIGHEST  # f32 products: TF32 / bf16 passes would move grey levels
    wy = resample_matrix(top, height, side_h, out_hw[0], antialias)
    wx = resample_matrix(left, width, side_w, out_hw[1], antialias)
    y = jnp.einsum("nsh,nhwc->nswc", wy, x, precision=hi)
    return jnp.einsum("ntw,nswc->nstc", wx, y, precision=hi)


def _pair(size) -> tuple[int, int]:
    return (int(size), int(size)) if isinstance(size, int) else tuple(map(int, size))


def _rrc_u(x, u, *, size, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3), antialias=True):
    height, width = x.shape[1:3]
    box = rrc_params(u, height, width, scale, ratio)
    return _resample(x, *box, _pair(size), antialias)


def _resize_u(x, u, *, size, antialias=True):
    """`resize`: an int is the shorter side (the other `int(size · long / short)`), a pair is
    `(h, w)`; the whole image, antialiased when it shrinks."""
    del u
    height, width = x.shape[1:3]
    if isinstance(size, int):
        long = int(size * max(height, width) / min(height, width))
        out_hw = (size, long) if height <= width else (long, size)
    else:
        out_hw = _pair(size)
    n = x.shape[0]
    zero = jnp.zeros([n], jnp.int32)
    full = (jnp.full([n], height, jnp.int32), jnp.full([n], width, jnp.int32))
    return _resample(x, zero, zero, *full, out_hw, antialias)


def _center_crop_u(x, u, *, size):
    """`center_crop`: zero padding where the crop is larger, `round((H − h) / 2)` offsets."""
    del u
    crop_h, crop_w = _pair(size)
    height, width = x.shape[1:3]
    pad_h, pad_w = max(crop_h - height, 0), max(crop_w - width, 0)
    pads = ((0, 0), (pad_h // 2, (pad_h + 1) // 2), (pad_w // 2, (pad_w + 1) // 2), (0, 0))
    x = jnp.pad(x, pads)
    top = round((height + pad_h - crop_h) / 2)
    left = round((width + pad_w - crop_w) / 2)
    return x[:, top : top + crop_h, left : left + crop_w]


def _flip_u(x, u, *, p):
    return jnp.where(u[:, 0, None, None, None] < p, x[:, :, ::-1], x)


def _jigsaw_u(x, u, *, grid, patch):
    """PIRL / PyContrast `JigsawCrop` as the host's `augment._jigsaw`: `grid × grid` cells of
    `side // grid` px, a `patch × patch` crop at a uniform integer offset in each (`u [N,
    2·grid²]`: row offsets, then column offsets, cell by cell), laid out as a `[grid·patch,
    grid·patch, C]` mosaic, cell (i, j) at block (i, j)."""
    n, height, width, channels = x.shape
    cell_h, cell_w = height // grid, width // grid
    if patch > min(cell_h, cell_w):
        raise ValueError(
            f"jigsaw: patch={patch} is larger than the {cell_h}×{cell_w} cells of a "
            f"{height}×{width} image in a {grid}×{grid} grid."
        )
    cells = grid * grid
    origin = (jnp.arange(cells) // grid, jnp.arange(cells) % grid)
    offsets = []
    for axis, (cell, u_axis) in enumerate(((cell_h, u[:, :cells]), (cell_w, u[:, cells:]))):
        shift = jnp.minimum((u_axis * (cell - patch + 1)).astype(jnp.int32), cell - patch)
        start = origin[axis][None, :] * cell + shift  # [N, cells]
        offsets.append(start[:, :, None] + jnp.arange(patch)[None, None, :])  # [N, cells, patch]
    rows, cols = offsets
    example = jnp.arange(n)[:, None, None, None]
    y = x[example, rows[:, :, :, None], cols[:, :, None, :]]  # [N, cells, patch, patch, C]
    y = y.reshape(n, grid, grid, patch, patch, channels).transpose(0, 1, 3, 2, 4, 5)
    return y.reshape(n, grid * patch, grid * patch, channels)


def _rand_augment_u(x, u, **params):
    from ssl_jax.data import device_randaugment  # its 15 ops compile only where a recipe has it

    return device_randaugment.rand_augment(x, u, **params)


# op → `fn(x float [N, H, W, C] in [0, 1], u [N, op_draws(op)], **params)`
RECIPE_OPS: dict[str, Callable[..., jnp.ndarray]] = {
    "random_resized_crop": _rrc_u,
    "resize": _resize_u,
    "center_crop": _center_crop_u,
    "horizontal_flip": _flip_u,
    "color_jitter": _jitter_u,
    "grayscale": _grayscale_u,
    "gaussian_blur": _blur_u,
    "solarize": _solarize_u,
    "rand_augment": _rand_augment_u,
    "jigsaw": _jigsaw_u,
}


def recipe_view(
    images: jnp.ndarray, recipe: Sequence[Mapping[str, Any]], u: jnp.ndarray
) -> jnp.ndarray:
    """uint8 `[N, H, W, C]` source images → uint8 `[N, h, w, C]` views: every op of `recipe` but a
    trailing normalising one (`color_space`, `learned_flow`: `to_model_input` runs it), in recipe
    order on float pixels, quantised once at the end — what the host pipeline hands over for the
    same `u [N, recipe_ops.num_draws(recipe)]`."""
    x = images.astype(jnp.float32) / 255.0
    offset = 0
    for k, op in enumerate(recipe):
        params = {key: tuple(v) if isinstance(v, list) else v for key, v in op.items()}
        name = params.pop("op")
        width = recipe_ops.op_draws(op)
        if name in FLOAT_OPS:
            if k != len(recipe) - 1:
                raise ValueError(f"recipe op {k} ({name}) must be the recipe's last op.")
        elif name in RECIPE_OPS:
            x = RECIPE_OPS[name](x, u[:, offset : offset + width], **params)
        else:
            raise ValueError(
                f"recipe op {k}: {name!r} has no device version ({tuple(RECIPE_OPS)})."
            )
        offset += width
    return jnp.round(jnp.clip(x * 255.0, 0.0, 255.0)).astype(jnp.uint8)


def uint8_views(
    images: jnp.ndarray, recipes: Sequence[Sequence[Mapping[str, Any]]], rng: jax.Array
) -> tuple[jnp.ndarray, ...]:
    """Each view of uint8 source images `[N, H, W, C]`: its recipe (`recipe_view`) with uniforms
    `u [N, num_draws(recipe)]` drawn per example from `fold_in(rng, v)` for view `v`."""
    out = []
    for v, recipe in enumerate(recipes):
        shape = (images.shape[0], max(recipe_ops.num_draws(recipe), 1))
        u = jax.random.uniform(jax.random.fold_in(rng, v), shape)
        out.append(recipe_view(images, recipe, u))
    return tuple(out)


def device_views(
    images: jnp.ndarray,
    recipes: Sequence[Sequence[Mapping[str, Any]]],
    rng: jax.Array,
    mean: Sequence[float],
    std: Sequence[float],
    dtype=jnp.float32,
) -> tuple[jnp.ndarray, ...]:
    """`config.data.pipeline = 'device'`: the views of uint8 source images `[N, H, W, C]` (the
    step's rows of the split in device memory; `uint8_views`) as model input (`to_model_input`)."""
    views = uint8_views(images, recipes, rng)
    return tuple(
        to_model_input(view, recipe, mean, std, dtype) for view, recipe in zip(views, recipes)
    )


# Geometry `device_augment.cut_views` does not run (it runs a leading random_resized_crop, flips).
_OTHER_GEOMETRY = ("resize", "center_crop", "jigsaw", "rand_augment")


def device_crop_side(data: ml_collections.ConfigDict) -> int:
    """The canvas side the pipeline uses: `data.device_crops` where `data.device_ops` is on (a
    derived config that turns the device ops off, e.g. the linear probe's, gets host crops), else 0."""
    return int(data.get("device_crops", 0) or 0) if data.get("device_ops", False) else 0


def check_device_crops(data: ml_collections.ConfigDict) -> None:
    """`data.device_crops` (canvas side, 0 = off) needs `data.device_ops` and recipes whose geometry
    is a leading `random_resized_crop` and flips (the ops `device_augment.cut_views` runs)."""
    canvas = data.get("device_crops", 0)
    check_range("data.device_crops", canvas, low=0, integer=True)
    if not canvas:
        return
    if not data.device_ops:
        raise ConfigError(
            f"config.data.device_crops={canvas} needs config.data.device_ops=True (the views are "
            "cut on the device, so their colour ops run there too)"
        )
    for view in data.views:
        ops = [op["op"] for op in data.recipes[view]]
        other = [o for o in ops if o in _OTHER_GEOMETRY]
        if not ops or ops[0] != "random_resized_crop" or other or ops.count(ops[0]) > 1:
            raise ConfigError(
                f"config.data.device_crops={canvas}: recipe {view!r} ({ops}) must start with its "
                f"only random_resized_crop and have no {'/'.join(_OTHER_GEOMETRY)}; set "
                "config.data.device_crops=0 for it"
            )
