"""The colour ops on the accelerator, inside the jitted step (jnp only): the twins of
`host/colour.py`.

The host pipeline hands over uint8 crops; normalisation (and, per config, the colour ops of a
recipe) happen here so the host-to-device copy stays uint8. SCE's official pipeline does the same:
colour jitter, grayscale, blur and solarize on the GPU (Kornia), crops and flips on the CPU.

The colour ops take float images in [0, 1], `[N, H, W, C]`, and a key; every example gets its own
key (`jax.random.split(rng, N)` + `vmap`), so every example draws its own apply/skip decision and
its own factors, as a torchvision transform applied image by image would. They keep torchvision's
semantics and the host ops' (`host/colour.py`) conventions, so a recipe means the same on either
side:

- `color_jitter`: `RandomApply([ColorJitter(b, c, s, h)], p)`; factors ~ U[max(0, 1 − b), 1 + b]
  (contrast, saturation alike), hue shift ~ U[−h, h], the four applied in a per-example random order
  (`randperm(4)`), each clamped to [0, 1]; a component given as 0 is skipped.
- `grayscale`: `RandomGrayscale(p)` with ITU-R 601-2 luma (0.299, 0.587, 0.114) — PIL's and
  `host/colour.py`'s weights (torchvision's tensor path rounds the red one to 0.2989).
- `gaussian_blur`: `RandomApply([GaussianBlur(kernel_size, sigma)], p)`, per-example σ, separable,
  reflect padding; `kernel_size` 0 = the odd number nearest to 10% of the shorter side, at least 3.
- `solarize`: `RandomSolarize(threshold, p)`: `x → 1 − x` where `x >= threshold`.
- `color_space`: CMC's colour transfer + `Normalize` (`color_spaces.convert`): RGB → Lab / YCbCr /
  YDbDr normalised with the official mean/std, in place of `config.data.mean/std`; a recipe's last
  op. Without `device_ops` the host runs the rest of the recipe and `recipe.to_model_input` runs it.

The random choices are computed for every example and selected with masks (no data-dependent
control flow), so each op costs the same whatever it draws.
"""

import inspect
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

from ssl_jax.data import recipe_ops
from ssl_jax.data.device.color_spaces import convert
from ssl_jax.data.recipe_ops import LUMA, blur_kernel_size

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
    """`color_jitter` on float `[N, H, W, C]` with the host's uniforms `u [N, 9]` (the host's
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
    """RGB `[N, H, W, 3]` in [0, 1] → `space`, normalised (`color_spaces.convert`);
    deterministic."""
    del rng
    _needs_colour(images, "color_space")
    return convert(images, space)


def learned_flow(images: jnp.ndarray, rng: jax.Array, path: str) -> jnp.ndarray:
    """RGB `[N, H, W, 3]` in [0, 1] → InfoMin's learned colour space: the frozen view generator g
    that `view_learning.learn_views` saved at `path`, applied to its input space and standardised
    per channel (`flow_views.apply_flow`); deterministic. Split like a colour space: 1 | 2."""
    del rng
    _needs_colour(images, "learned_flow")
    from ssl_jax.data.device import flow_views  # flax's flow loads only where a recipe has the op

    return flow_views.apply_flow(flow_views.load_flow(path), images)


DEVICE_OPS: dict[str, Callable[..., jnp.ndarray]] = {
    "color_jitter": color_jitter,
    "grayscale": grayscale,
    "gaussian_blur": gaussian_blur,
    "solarize": solarize,
    "color_space": color_space,
    "learned_flow": learned_flow,
}


# op → `fn(x float [N, H, W, C] in [0, 1], u [N, op_draws(op)], **params)` (`recipe.RECIPE_OPS`)
UNIFORM_OPS: dict[str, Callable[..., jnp.ndarray]] = {
    "color_jitter": _jitter_u,
    "grayscale": _grayscale_u,
    "gaussian_blur": _blur_u,
    "solarize": _solarize_u,
}
