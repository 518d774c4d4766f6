"""Standard augmentation recipes as plain data (tuples of op dicts), for configs to import.

Each function takes the view size and returns a tuple of op dicts (see `host/augment.py` for the ops):
`config.data.recipes = {'mocov2': recipes.mocov2(224)}`. Numbers follow the cited papers / code.
"""

from __future__ import annotations

from ssl_jax.data import recipe_ops

Recipe = tuple[dict, ...]

# PIL's `GaussianBlur(radius=σ)` has no kernel size (its box-filter passes reach about ±3σ): 13 taps
# cover ±3σ at σ = 2.
PIL_BLUR_TAPS = 13


def _color_jitter(
    brightness: float, contrast: float, saturation: float, hue: float, p: float = 0.8
) -> dict:
    """torchvision `ColorJitter(brightness, contrast, saturation, hue)` applied with probability `p`
    (`RandomApply`), as the op dict."""
    return {
        "op": "color_jitter",
        "p": p,
        "brightness": brightness,
        "contrast": contrast,
        "saturation": saturation,
        "hue": hue,
    }


def mocov2(size: int, blur: bool = True, kernel_size: int = 0) -> Recipe:
    """MoCo v2 (Chen et al. 2020, `main_moco.py --aug-plus`): RRC scale (0.2, 1), colour jitter
    (0.4, 0.4, 0.4, 0.1) p 0.8, grayscale p 0.2, Gaussian blur sigma (0.1, 2) p 0.5 over
    `kernel_size` taps (0: auto), flip. `blur=False` is the usual CIFAR variant."""
    ops = [
        {"op": "random_resized_crop", "size": size, "scale": (0.2, 1.0)},
        _color_jitter(0.4, 0.4, 0.4, 0.1),
        {"op": "grayscale", "p": 0.2},
    ]
    if blur:
        ops.append(
            {"op": "gaussian_blur", "p": 0.5, "sigma": (0.1, 2.0), "kernel_size": kernel_size}
        )
    ops.append({"op": "horizontal_flip", "p": 0.5})
    return tuple(ops)


def ring_mocov2_32x32(size: int = 32, kernel_size: int = PIL_BLUR_TAPS) -> Recipe:
    """The Ring/CNCE code's `mocov2_32x32_transforms` (mhw32/contrastive-ring-public
    `src/datasets/datasets.py` L127–139): `mocov2(size)` with its PIL Gaussian blur σ∈[0.1, 2] p 0.5
    (L134; `GaussianBlur` L171–178), `PIL_BLUR_TAPS` taps."""
    return mocov2(size, kernel_size=kernel_size)


def simclr(size: int, strength: float = 1.0, blur: bool = True) -> Recipe:
    """SimCLR (Chen et al. 2020, appendix A): RRC scale (0.08, 1), flip, colour jitter
    (0.8s, 0.8s, 0.8s, 0.2s) p 0.8, grayscale p 0.2, blur p 0.5 (ImageNet only)."""
    s = strength
    ops = [
        {"op": "random_resized_crop", "size": size, "scale": (0.08, 1.0)},
        {"op": "horizontal_flip", "p": 0.5},
        _color_jitter(0.8 * s, 0.8 * s, 0.8 * s, 0.2 * s),
        {"op": "grayscale", "p": 0.2},
    ]
    if blur:
        ops.append({"op": "gaussian_blur", "p": 0.5, "sigma": (0.1, 2.0), "kernel_size": 0})
    return tuple(ops)


def _byol(size: int, blur_p: float, solarize_p: float) -> Recipe:
    return (
        {"op": "random_resized_crop", "size": size, "scale": (0.08, 1.0)},
        {"op": "horizontal_flip", "p": 0.5},
        _color_jitter(0.4, 0.4, 0.2, 0.1),
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


def fashion_mnist_default(size: int = 28, scale: tuple[float, float] = (0.2, 1.0)) -> Recipe:
    """Grayscale data: RRC scale (0.2, 1), flip, brightness / contrast jitter p 0.8. No saturation,
    hue or grayscale op, so it works with `channels` 1 or 3."""
    return (
        {"op": "random_resized_crop", "size": size, "scale": scale},
        {"op": "horizontal_flip", "p": 0.5},
        {"op": "color_jitter", "p": 0.8, "brightness": 0.4, "contrast": 0.4},
    )


def instance_discrimination(size: int) -> Recipe:
    """IR (Wu et al. 2018, lemniscate.pytorch `main.py`): RRC scale (0.2, 1), grayscale p 0.2,
    colour jitter (0.4, 0.4, 0.4, 0.4) always applied, flip. (Its CIFAR script jitters first.)"""
    return (
        {"op": "random_resized_crop", "size": size, "scale": (0.2, 1.0)},
        {"op": "grayscale", "p": 0.2},
        _color_jitter(0.4, 0.4, 0.4, 0.4, p=1.0),
        {"op": "horizontal_flip", "p": 0.5},
    )


def eval_only(size: int, crop_fraction: float = 1.0) -> Recipe:
    """Deterministic eval view: shorter side resized to `round(size / crop_fraction)`, then
    centre crop."""
    return (
        {"op": "resize", "size": round(size / crop_fraction)},
        {"op": "center_crop", "size": size},
    )


# --------------------------------------------------------------------------------------------------
# SCE (Denize et al. 2023), Table 2, and the official code (CEA-LIST/SCE transform yamls).
# `weak` above is Table 2's *weak* (crop + flip, ReSSL's). Host ops (crop, flip) come first, then
# the colour ops in the official order (jitter, grayscale, blur, solarize); a flip commutes with
# all of them.
# --------------------------------------------------------------------------------------------------


def _sce_view(
    size: int,
    scale: tuple[float, float],
    flip: bool,
    saturation: float,
    blur_p: float,
    solarize_p: float,
    kernel_size: int,
) -> Recipe:
    ops = [{"op": "random_resized_crop", "size": size, "scale": scale}]
    if flip:
        ops.append({"op": "horizontal_flip", "p": 0.5})
    ops += [
        _color_jitter(0.4, 0.4, saturation, 0.1),
        {"op": "grayscale", "p": 0.2},
    ]
    if blur_p:
        ops.append(
            {"op": "gaussian_blur", "p": blur_p, "sigma": (0.1, 2.0), "kernel_size": kernel_size}
        )
    if solarize_p:
        ops.append({"op": "solarize", "p": solarize_p, "threshold": 0.5})
    return tuple(ops)


def strong(
    size: int, scale: tuple[float, float] = (0.2, 1.0), kernel_size: int = 0, flip: bool = True
) -> Recipe:
    """SCE Tab. 2 *strong* (ReSSL's strong view, the MoCo v2 augmentation): RRC scale (0.2, 1),
    flip, jitter (0.4, 0.4, 0.4, 0.1) p 0.8, grayscale p 0.2, blur σ∈[0.1, 2] p 0.5, no solarize.
    `kernel_size` 0 = 10% of the side (23 at 224 px); the official GPU pipeline uses 23 at every
    size."""
    return _sce_view(size, scale, flip, 0.4, 0.5, 0.0, kernel_size)


def strong_alpha(
    size: int, scale: tuple[float, float] = (0.2, 1.0), kernel_size: int = 0, flip: bool = True
) -> Recipe:
    """SCE Tab. 2 *strong-α* (BYOL's first view): jitter (0.4, 0.4, 0.2, 0.1) p 0.8, grayscale
    p 0.2, blur p 1.0, no solarize; RRC scale (0.2, 1) and flip as the SCE code."""
    return _sce_view(size, scale, flip, 0.2, 1.0, 0.0, kernel_size)


def strong_beta(
    size: int, scale: tuple[float, float] = (0.2, 1.0), kernel_size: int = 0, flip: bool = True
) -> Recipe:
    """SCE Tab. 2 *strong-β* (BYOL's second view): as strong-α with blur p 0.1 and solarize p 0.2.
    `flip=False` is the official 2-crop ImageNet transform (`two_crops_gpu_mocov3.yaml` has no flip
    on this view; Tab. 2 and the multi-crop transform have one)."""
    return _sce_view(size, scale, flip, 0.2, 0.1, 0.2, kernel_size)


def strong_gamma(
    size: int, scale: tuple[float, float] = (0.2, 1.0), kernel_size: int = 0, flip: bool = True
) -> Recipe:
    """SCE Tab. 2 *strong-γ* (mix of α and β): blur p 0.5 and solarize p 0.2; the local crops of
    the multi-crop setting (`sce_local_crops` for their sizes and scales)."""
    return _sce_view(size, scale, flip, 0.2, 0.5, 0.2, kernel_size)


# SCE multi-crop local crops (paper Sec. 4.3, official `five_crops_cpu.yaml`): (size, RRC scale)
# next to the two 224-px global crops of scale (0.2, 1).
SCE_LOCAL_CROPS = (
    (192, (0.172, 0.86)),
    (160, (0.143, 0.715)),
    (128, (0.114, 0.571)),
    (96, (0.086, 0.429)),
)


def sce_local_crops(global_size: int = 224) -> tuple[tuple[int, tuple[float, float]], ...]:
    """`SCE_LOCAL_CROPS` with the sizes scaled by `global_size / 224` (same scales): e.g. 24, 20, 16
    and 12 px next to 28-px global crops."""
    return tuple((max(1, round(s * global_size / 224)), scale) for s, scale in SCE_LOCAL_CROPS)


def cifar_soft(size: int = 32) -> Recipe:
    """SCE CIFAR-10 "soft" view, the target's: RRC scale (0.2, 1), flip
    (`two_crops_soft_and_strong_pil_contrastive_cifar10.yaml`)."""
    return weak(size, (0.2, 1.0))


def cifar_strong(size: int = 32, kernel_size: int = PIL_BLUR_TAPS) -> Recipe:
    """SCE CIFAR-10 strong view (same yaml): RRC scale (0.2, 1), jitter (0.4, 0.4, 0.4, 0.1) p 0.8,
    grayscale p 0.2, PIL Gaussian blur σ∈[0.1, 2] p 0.5 (`PIL_BLUR_TAPS` taps), flip."""
    return _sce_view(size, (0.2, 1.0), True, 0.4, 0.5, 0.0, kernel_size)


# --------------------------------------------------------------------------------------------------
# CMC (Tian et al. 2020): the view is the whole converted image; the model splits its channels at
# `color.SPACES[space].split` into the 1-channel and the 2-channel view (L | ab, ...).
# --------------------------------------------------------------------------------------------------


def cmc(size: int, space: str = "lab", scale: tuple[float, float] = (0.08, 1.0)) -> Recipe:
    """CMC (HobbitLong/CMC `train_CMC.py`): RRC scale (crop_low, 1) (0.08 for ResNets, 0.2 for
    AlexNet), flip, colour transfer to `space` (`RGB2Lab` by default) + its `Normalize`. No colour
    jitter. Model input `[H, W, 3]` in `space`, normalised."""
    return (
        {"op": "random_resized_crop", "size": size, "scale": scale},
        {"op": "horizontal_flip", "p": 0.5},
        {"op": "color_space", "space": space},
    )


def cmc_pycontrast(
    size: int, space: str = "ydbdr", scale: tuple[float, float] = (0.08, 1.0)
) -> Recipe:
    """PyContrast's augmentation "C" of its `CMC` preset (`datasets/util.py`): RRC scale (0.08, 1)
    (memory bank; 0.2 with a MoCo queue), flip, colour jitter (0.4, 0.4, 0.4, 0.1) always applied,
    then `RGB2YDbDr` + its `Normalize`."""
    return (
        {"op": "random_resized_crop", "size": size, "scale": scale},
        {"op": "horizontal_flip", "p": 0.5},
        _color_jitter(0.4, 0.4, 0.4, 0.1, p=1.0),
        {"op": "color_space", "space": space},
    )


# --------------------------------------------------------------------------------------------------
# InfoMin (Tian et al. 2020, PyContrast `datasets/util.py`): augmentations "D" (InfoMin) and "E"
# (CMCv2), RandAugment `rand-n2-m10-mstd0.5` from PyContrast's copy of timm (`host/randaugment.py`).
# --------------------------------------------------------------------------------------------------


def _infomin_view(
    size: int, jitter: tuple[float, float, float, float], ops, grayscale: bool, kernel_size: int
) -> Recipe:
    b, c, s, h = jitter
    out = [
        {"op": "random_resized_crop", "size": size, "scale": (0.2, 1.0)},
        {"op": "horizontal_flip", "p": 0.5},
        _color_jitter(b, c, s, h),
        {"op": "gaussian_blur", "p": 0.5, "sigma": (0.1, 2.0), "kernel_size": kernel_size},
    ]
    rand = {"op": "rand_augment", "num_ops": 2, "magnitude": 10.0, "magnitude_std": 0.5, "p": 0.5}
    if ops is not None:
        rand["ops"] = ops
    out.append({**rand, "fill": (124, 116, 104)})
    if grayscale:
        out.append({"op": "grayscale", "p": 0.2})
    return tuple(out)


def infomin(size: int, kernel_size: int = 23) -> Recipe:
    """PyContrast aug "D" (the `InfoMin` preset), in its order: RRC scale (0.2, 1) (MoCo queue),
    flip, jitter (0.8, 0.8, 0.8, 0.2) p 0.8, Gaussian blur σ∈[0.1, 2] p 0.5 with 23 taps
    (`GaussianBlur(22)`, at every size; 0 = 10% of the side), RandAugment n2 m10 mstd0.5 over timm's
    15 ops (fill = ImageNet mean), grayscale p 0.2."""
    return _infomin_view(size, (0.8, 0.8, 0.8, 0.2), None, True, kernel_size)


def cmcv2_e(size: int, kernel_size: int = 23) -> Recipe:
    """PyContrast aug "E" (the `CMCv2` preset): as `infomin` with jitter (0.4, 0.4, 0.4, 0.1) p 0.8,
    no grayscale, and RandAugment over `_RAND_TRANSFORMS_CMC` (AutoContrast, Identity, Rotate,
    Sharpness, ShearX/Y, TranslateX/YRel: no colour ops). Add `color_space` last for CMC's views."""
    return _infomin_view(
        size, (0.4, 0.4, 0.4, 0.1), recipe_ops.RAND_TRANSFORMS_CMC, False, kernel_size
    )


def jigsaw(
    size: int = 255, grid: int = 3, patch: int = 64, scale: tuple[float, float] = (0.6, 1.0)
) -> Recipe:
    """PyContrast's jigsaw transform (`datasets/util.py`, PIRL-style, InfoMin's jigsaw branch):
    RRC(255, scale (0.6, 1)), flip, `JigsawCrop` (3 × 3 cells of 85 px, a random 64 × 64 patch in
    each), no colour ops; the view is the `[grid·patch, grid·patch, C]` mosaic of the patches
    (192 px at 255), which the model cuts back into `grid²` patches."""
    return (
        {"op": "random_resized_crop", "size": size, "scale": tuple(scale)},
        {"op": "horizontal_flip", "p": 0.5},
        {"op": "jigsaw", "grid": grid, "patch": patch},
    )


RECIPES = {
    "mocov2": mocov2,
    "simclr": simclr,
    "byol_view1": byol_view1,
    "byol_view2": byol_view2,
    "weak": weak,
    "fashion_mnist_default": fashion_mnist_default,
    "eval_only": eval_only,
    "instance_discrimination": instance_discrimination,
    "strong": strong,
    "strong_alpha": strong_alpha,
    "strong_beta": strong_beta,
    "strong_gamma": strong_gamma,
    "cifar_soft": cifar_soft,
    "cifar_strong": cifar_strong,
    "cmc": cmc,
    "cmc_pycontrast": cmc_pycontrast,
    "infomin": infomin,
    "cmcv2_e": cmcv2_e,
    "jigsaw": jigsaw,
}
