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

The random choices are computed for every example and selected with masks (no data-dependent
control flow), so each op costs the same whatever it draws.
"""

import functools
import inspect
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from ssl_jax.data import color

LUMA = (0.299, 0.587, 0.114)
# Recipe ops that run on the host (`augment.py`); `apply_recipe` skips them.
HOST_OPS = ("random_resized_crop", "resize", "center_crop", "horizontal_flip", "jigsaw")
_PERMUTATIONS_4 = tuple(itertools.permutations(range(4)))  # the 24 orders of the jitter's ops


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


def _per_example(
    fn: Callable[[jnp.ndarray, jax.Array], jnp.ndarray], images: jnp.ndarray, rng: jax.Array
) -> jnp.ndarray:
    """`fn(image [H, W, C] float32, key)` on every example with its own key; keeps the dtype."""
    keys = jax.random.split(rng, images.shape[0])
    out = jax.vmap(fn)(images.astype(jnp.float32), keys)
    return out.astype(images.dtype)


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


def color_jitter(
    images: jnp.ndarray,
    rng: jax.Array,
    p: float = 1.0,
    brightness: float | Sequence[float] = 0.0,
    contrast: float | Sequence[float] = 0.0,
    saturation: float | Sequence[float] = 0.0,
    hue: float | Sequence[float] = 0.0,
) -> jnp.ndarray:
    """`RandomApply([ColorJitter(brightness, contrast, saturation, hue)], p)` per example.

    Amounts as torchvision: a float `b` means a factor ~ U[max(0, 1 − b), 1 + b] (hue: a shift
    ~ U[−h, h] turns), a pair is the range itself; 0 skips the component. The order of the four
    adjustments is a per-example random permutation, realised as a fixed sequence of four slots
    (a `fori_loop`, so the slot compiles once) that each pick one adjustment with `lax.switch` —
    under `vmap` a masked select, so every slot evaluates the four adjustments.

    Args:
      images: float `[N, H, W, C]` in [0, 1] (C = 3 when saturation or hue is used).
      rng: one key for the batch.
      p: probability of jittering an example (may be traced).
      brightness, contrast, saturation, hue: amounts (static Python numbers or pairs).

    Returns:
      `[N, H, W, C]`, the input dtype.
    """
    ranges = (
        _factor_range(brightness, "brightness"),
        _factor_range(contrast, "contrast"),
        _factor_range(saturation, "saturation"),
        _hue_range(hue),
    )
    if ranges[2] is not None or ranges[3] is not None:
        _needs_colour(images, "color_jitter saturation/hue")
    if all(r is None for r in ranges):
        return images
    adjust = (adjust_brightness, adjust_contrast, adjust_saturation, adjust_hue)

    def one(x, key):
        # One draw per example: [apply, 4 factors, permutation] (an even count compiles faster).
        u = jax.random.uniform(key, (6,))
        # A uniform random permutation of the four adjustments, as torchvision's randperm(4).
        order = jnp.asarray(_PERMUTATIONS_4, jnp.int32)[
            jnp.minimum(jnp.floor(u[5] * 24), 23).astype(jnp.int32)
        ]
        branches = []
        for k, (fn, bounds) in enumerate(zip(adjust, ranges)):
            if bounds is None:
                branches.append(lambda y: y)
            else:
                factor = bounds[0] + (bounds[1] - bounds[0]) * u[1 + k]
                branches.append(lambda y, fn=fn, factor=factor: fn(y, factor))
        # Four slots; slot s applies adjustment order[s].
        y = jax.lax.fori_loop(0, 4, lambda s, y: jax.lax.switch(order[s], branches, y), x)
        return _apply_with_p(u[0], p, y, x)

    return _per_example(one, images, rng)


def grayscale(images: jnp.ndarray, rng: jax.Array, p: float) -> jnp.ndarray:
    """`RandomGrayscale(p)`: the luma copied into all 3 channels, per example."""
    _needs_colour(images, "grayscale")

    def one(x, key):
        return _apply_with_p(jax.random.uniform(key), p, jnp.broadcast_to(_gray(x), x.shape), x)

    return _per_example(one, images, rng)


def gaussian_blur(
    images: jnp.ndarray,
    rng: jax.Array,
    p: float,
    sigma: Sequence[float] = (0.1, 2.0),
    kernel_size: int = 0,
) -> jnp.ndarray:
    """`RandomApply([GaussianBlur(kernel_size, sigma)], p)`: σ ~ U[sigma] per example.

    `kernel_size` must be odd; 0 = `blur_kernel_size(min(H, W))`. Reflect padding needs
    `kernel_size // 2 < min(H, W)`.
    """
    height, width = images.shape[1:3]
    kernel_size = kernel_size or blur_kernel_size(min(height, width))
    if kernel_size % 2 != 1 or kernel_size // 2 >= min(height, width):
        raise ValueError(
            f"gaussian_blur kernel_size={kernel_size} must be odd and its radius smaller than the "
            f"image side ({height}×{width})."
        )
    lo, hi = sigma

    def one(x, key):
        u = jax.random.uniform(key, (2,))  # [apply, sigma]
        s = lo + (hi - lo) * u[1]
        return _apply_with_p(u[0], p, blur(x, gaussian_kernel1d(s, kernel_size)), x)

    return _per_example(one, images, rng)


def solarize(images: jnp.ndarray, rng: jax.Array, p: float, threshold: float = 0.5) -> jnp.ndarray:
    """`RandomSolarize(threshold, p)` on [0, 1] images: `x → 1 − x` where `x >= threshold`."""

    def one(x, key):
        u = jax.random.uniform(key)
        return _apply_with_p(u, p, jnp.where(x >= threshold, 1.0 - x, x), x)

    return _per_example(one, images, rng)


def color_space(images: jnp.ndarray, rng: jax.Array, space: str) -> jnp.ndarray:
    """RGB `[N, H, W, 3]` in [0, 1] → `space`, normalised (`color.convert`); deterministic."""
    del rng
    _needs_colour(images, "color_space")
    return color.convert(images, space)


def learned_flow(images: jnp.ndarray, rng: jax.Array, path: str) -> jnp.ndarray:
    """RGB `[N, H, W, 3]` in [0, 1] → InfoMin's learned colour space: the frozen view generator g
    that `view_learning.learn_views` saved at `path`, applied to its input space and standardised
    per channel (`view_learning.apply_flow`); deterministic. Split like a colour space: 1 | 2."""
    del rng
    _needs_colour(images, "learned_flow")
    from ssl_jax import view_learning

    return view_learning.apply_flow(view_learning.load_flow(path), images)


DEVICE_OPS: dict[str, Callable[..., jnp.ndarray]] = {
    "color_jitter": color_jitter,
    "grayscale": grayscale,
    "gaussian_blur": gaussian_blur,
    "solarize": solarize,
    "color_space": color_space,
    "learned_flow": learned_flow,
}
# Ops that end a recipe with normalised model input (they replace `normalize`).
NORMALIZING_OPS = ("color_space", "learned_flow")


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
            normalized = name in NORMALIZING_OPS
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
    if ops and ops[-1]["op"] in NORMALIZING_OPS:
        return apply_recipe(images, ops[-1:], jax.random.PRNGKey(0), mean, std, dtype)
    return normalize(images, mean, std, dtype)


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
    side_h, side_w = canvas.shape[1:3]
    hi = jax.lax.Precision.HIGHEST  # f32 products: TF32 / bf16 passes would move grey levels
    out = []
    for v, (out_h, out_w, antialias) in enumerate(geometry):
        top, left, height, width = (boxes[:, v, k] for k in range(4))
        wy = resample_matrix(top, height, side_h, out_h, antialias)
        wx = resample_matrix(left, width, side_w, out_w, antialias)
        y = jnp.einsum("nsh,nhwc->nswc", wy, x, precision=hi)
        y = jnp.einsum("ntw,nswc->nstc", wx, y, precision=hi)
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
    return ops[-1:] if ops and ops[-1]["op"] in NORMALIZING_OPS else ()


def eval_input(images: jnp.ndarray, data_config, dtype=jnp.float32) -> jnp.ndarray:
    """uint8 eval images `[N, H, W, C]` → model input as in pretraining: the run's colour space
    (`eval_ops`) or `normalize` with `data.mean` / `data.std`."""
    mean, std = tuple(data_config.mean), tuple(data_config.std)
    return to_model_input(images, eval_ops(data_config), mean, std, dtype)
