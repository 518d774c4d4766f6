"""A picture of every RandAugment op: ours (TensorFlow) beside PIL's, on `skimage.data.astronaut()`.

    python -m ssl_jax.data.host.randaugment_grid --out docs/randaugment_ops.png

Each op at magnitude 10 with the positive sign (PyContrast / timm arguments, bilinear, fill
(124, 116, 104)); the title gives the op's argument and the largest uint8 difference from PIL.
Solarize at magnitude 10 has threshold 256 and changes nothing, as in timm's original table.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np
from PIL import Image, ImageEnhance, ImageOps

from ssl_jax.data.host import randaugment as ra
from ssl_jax.data.recipe_ops import IMAGENET_FILL, MAX_LEVEL


def pil_op(name: str, image: np.ndarray, m: float, sign: float = 1.0, fill=IMAGENET_FILL):
    """PyContrast's `RandAugment.py` op `name` at magnitude `m` on PIL, bilinear; uint8 out."""
    im = Image.fromarray(image)
    w, h = im.size
    kw = dict(resample=Image.BILINEAR, fillcolor=tuple(fill))
    s = sign * m / MAX_LEVEL
    factor = m / MAX_LEVEL * 1.8 + 0.1
    add = int(m / MAX_LEVEL * 110)
    ops = {
        "Identity": lambda: im,
        "AutoContrast": lambda: ImageOps.autocontrast(im),
        "Equalize": lambda: ImageOps.equalize(im),
        "Invert": lambda: ImageOps.invert(im),
        "Rotate": lambda: im.rotate(s * 30.0, **kw),
        "PosterizeTpu": lambda: ImageOps.posterize(im, int(m / MAX_LEVEL * 4)),
        "Solarize": lambda: ImageOps.solarize(im, int(m / MAX_LEVEL * 256)),
        "SolarizeAdd": lambda: im.point(
            [min(255, i + add) if i < 128 else i for i in range(256)] * 3
        ),
        "Color": lambda: ImageEnhance.Color(im).enhance(factor),
        "Contrast": lambda: ImageEnhance.Contrast(im).enhance(factor),
        "Brightness": lambda: ImageEnhance.Brightness(im).enhance(factor),
        "Sharpness": lambda: ImageEnhance.Sharpness(im).enhance(factor),
        "ShearX": lambda: im.transform(im.size, Image.AFFINE, (1, 0.3 * s, 0, 0, 1, 0), **kw),
        "ShearY": lambda: im.transform(im.size, Image.AFFINE, (1, 0, 0, 0.3 * s, 1, 0), **kw),
        "TranslateXRel": lambda: im.transform(
            im.size, Image.AFFINE, (1, 0, 0.45 * s * w, 0, 1, 0), **kw
        ),
        "TranslateYRel": lambda: im.transform(
            im.size, Image.AFFINE, (1, 0, 0, 0, 1, 0.45 * s * h), **kw
        ),
    }
    return np.asarray(ops[name]())


ARGS = {
    "Rotate": "30°",
    "PosterizeTpu": "4 bits",
    "Solarize": "thr 256",
    "SolarizeAdd": "+110",
    "Color": "×1.9",
    "Contrast": "×1.9",
    "Brightness": "×1.9",
    "Sharpness": "×1.9",
    "ShearX": "0.3",
    "ShearY": "0.3",
    "TranslateXRel": "0.45 W",
    "TranslateYRel": "0.45 H",
}


def write_grid(out: str, size: int = 128, magnitude: float = 10.0) -> dict[str, int]:
    """Write the grid (ours | PIL for every op in `ra.OPS`) to `out`; returns the max differences."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from skimage import data

    image = np.asarray(Image.fromarray(data.astronaut()).resize((size, size), Image.BILINEAR))
    names = list(ra.OPS)
    cols = 4  # ops per row, two panels each
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, 2 * cols, figsize=(2 * cols * 1.6, rows * 1.85))
    diffs = {}
    for k, name in enumerate(names):
        ours = ra.apply_op(name, image, magnitude).numpy()
        ref = pil_op(name, image, magnitude)
        diffs[name] = int(np.abs(ours.astype(int) - ref.astype(int)).max())
        label = f"{name} {ARGS.get(name, '')}".strip()
        for j, (panel, who) in enumerate(((ours, "ours"), (ref, "PIL"))):
            ax = axes[k // cols, 2 * (k % cols) + j]
            ax.imshow(panel)
            title = f"{label}\n{who}" + (f" (max diff {diffs[name]})" if j else "")
            ax.set_title(title, fontsize=6.5)
    for ax in axes.ravel():
        ax.axis("off")
    fig.suptitle(
        f"RandAugment ops at magnitude {magnitude:g} (timm / PyContrast), ours beside PIL",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return diffs


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/randaugment_ops.png")
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--magnitude", type=float, default=10.0)
    args = parser.parse_args(argv)
    diffs = write_grid(args.out, args.size, args.magnitude)
    print(f"wrote {args.out}; max |ours − PIL| per op: {diffs}")


if __name__ == "__main__":
    main()
