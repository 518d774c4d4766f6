"""Standard augmentation recipes as plain data (tuples of op dicts), for configs to import.

Each function takes the view size and returns a tuple of op dicts (see `augment.py` for the ops):
`config.data.recipes = {'mocov2': recipes.mocov2(224)}`. Numbers follow the cited papers / code.
"""

from __future__ import annotations

Recipe = tuple[dict, ...]


def mocov2(size: int, blur: bool = True) -> Recipe:
    """MoCo v2 (Chen et al. 2020, `main_moco.py --aug-plus`): RRC scale (0.2, 1), colour jitter
    (0.4, 0.4, 0.4, 0.1) p 0.8, grayscale p 0.2, Gaussian blur sigma (0.1, 2) p 0.5, flip.
    `blur=False` is the usual CIFAR variant."""
    ops = [
        {"op": "random_resized_crop", "size": size, "scale": (0.2, 1.0)},
        {"op": "color_jitter", "p": 0.8, "brightness": 0.4, "contrast": 0.4, "saturation": 0.4, "hue": 0.1},
        {"op": "grayscale", "p": 0.2},
    ]
    if blur:
        ops.append({"op": "gaussian_blur", "p": 0.5, "sigma": (0.1, 2.0), "kernel_size": 0})
    ops.append({"op": "horizontal_flip", "p": 0.5})
    return tuple(ops)


def simclr(size: int, strength: float = 1.0, blur: bool = True) -> Recipe:
    """SimCLR (Chen et al. 2020, appendix A): RRC scale (0.08, 1), flip, colour jitter
    (0.8s, 0.8s, 0.8s, 0.2s) p 0.8, grayscale p 0.2, blur p 0.5 (ImageNet only)."""
    s = strength
    ops = [
        {"op": "random_resized_crop", "size": size, "scale": (0.08, 1.0)},
        {"op": "horizontal_flip", "p": 0.5},
        {
            "op": "color_jitter",
            "p": 0.8,
            "brightness": 0.8 * s,
            "contrast": 0.8 * s,
            "saturation": 0.8 * s,
            "hue": 0.2 * s,
        },
        {"op": "grayscale", "p": 0.2},
    ]
    if blur:
        ops.append({"op": "gaussian_blur", "p": 0.5, "sigma": (0.1, 2.0), "kernel_size": 0})
    return tuple(ops)


def _byol(size: int, blur_p: float, solarize_p: float) -> Recipe:
    return (
        {"op": "random_resized_crop", "size": size, "scale": (0.08, 1.0)},
        {"op": "horizontal_flip", "p": 0.5},
        {"op": "color_jitter", "p": 0.8, "brightness": 0.4, "contrast": 0.4, "saturation": 0.2, "hue": 0.1},
        {"op": "grayscale", "p": 0.2},
        {"op": "gaussian_blur", "p": blur_p, "sigma": (0.1, 2.0), "kernel_size": 0},
        {"op": "solarize", "p": solarize_p, "threshold": 0.5},
    )


def byol_view1(size: int) -> Recipe:
    """BYOL (Grill et al. 2020, table 6) first view: blur p 1.0, no solarisation."""
    return _byol(size, blur_p=1.0, solarize_p=0.0)


def byol_view2(size: int) -> Recipe:
    """BYOL second view: blur p 0.1, solarisation p 0.2."""
    return _byol(size, blur_p=0.1, solarize_p=0.2)


def weak(size: int, scale: tuple[float, float] = (0.2, 1.0)) -> Recipe:
    """Weak view (ReSSL / SCE teacher): random resized crop and flip only."""
    return (
        {"op": "random_resized_crop", "size": size, "scale": scale},
        {"op": "horizontal_flip", "p": 0.5},
    )


def fashion_mnist_default(size: int = 28) -> Recipe:
    """Grayscale data: RRC scale (0.2, 1), flip, brightness / contrast jitter p 0.8. No saturation,
    hue or grayscale op, so it works with `channels` 1 or 3."""
    return (
        {"op": "random_resized_crop", "size": size, "scale": (0.2, 1.0)},
        {"op": "horizontal_flip", "p": 0.5},
        {"op": "color_jitter", "p": 0.8, "brightness": 0.4, "contrast": 0.4},
    )


def eval_only(size: int, crop_fraction: float = 1.0) -> Recipe:
    """Deterministic eval view: resize the shorter side to `round(size / crop_fraction)`, centre crop."""
    return (
        {"op": "resize", "size": round(size / crop_fraction)},
        {"op": "center_crop", "size": size},
    )


RECIPES = {
    "mocov2": mocov2,
    "simclr": simclr,
    "byol_view1": byol_view1,
    "byol_view2": byol_view2,
    "weak": weak,
    "fashion_mnist_default": fashion_mnist_default,
    "eval_only": eval_only,
}
