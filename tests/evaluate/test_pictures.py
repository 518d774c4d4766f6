"""Pictures of a pretraining workdir: curves, augmentation grid, t-SNE (PNG files)."""

import os

from PIL import Image

from ssl_jax.evaluate import pictures


def test_write_all(pretrained_workdir):
    paths = pictures.write_all(pretrained_workdir, num_points=60)
    assert [os.path.basename(p) for p in paths] == ["curves.png", "augmentations.png", "tsne.png"]
    for path in paths:
        with Image.open(path) as image:
            assert image.format == "PNG" and min(image.size) > 200, path
    assert not [n for n in os.listdir(pretrained_workdir) if ".tmp" in n]
