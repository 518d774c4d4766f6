"""Pictures of a pretraining workdir: curves, augmentation grid, t-SNE (PNG files)."""

import os

import numpy as np
from PIL import Image

from ssl_jax import configs
from ssl_jax.evaluate import pictures

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_write_all(pretrained_workdir):
    paths = pictures.write_all(pretrained_workdir, num_points=60)
    assert [os.path.basename(p) for p in paths] == ["curves.png", "augmentations.png", "tsne.png"]
    for path in paths:
        with Image.open(path) as image:
            assert image.format == "PNG" and min(image.size) > 200, path
    assert not [n for n in os.listdir(pretrained_workdir) if ".tmp" in n]


def test_colour_space_views_are_shown_in_rgb_with_and_without_device_ops():
    """CMC's recipe ends in `color_space` (Lab, normalised with Lab's own mean/std): the grid
    shows the RGB view before it, the same whether the colour ops run on the host or the
    device (its other ops are geometric, so both paths make the same pixels)."""
    config = configs.load(os.path.join(ROOT, "configs/cmc_color_fashion_mnist.py:runlocal"))
    assert {op["op"] for op in config.data.recipes.cmc} <= {
        "random_resized_crop",
        "horizontal_flip",
        "color_space",
    }
    shown = {}
    for device_ops in (False, True):
        config.data.device_ops = device_ops
        shown[device_ops] = pictures.augmentation_views(config, rows=3, draws=1)
    columns, host = shown[False]
    assert columns[1].startswith("view 1 (cmc, RGB before lab)")

    def unit(x):
        return x.astype(np.float32) / (255 if x.dtype == np.uint8 else 1)

    for key, image in shown[True][1].items():
        np.testing.assert_allclose(unit(image), unit(host[key]), atol=1e-5, err_msg=str(key))


def test_the_command_on_a_folder_that_is_no_workdir_is_one_error_line(tmp_path):
    """`python -m ssl_jax.evaluate.pictures --workdir=<no run>`: one `error:` line, exit 2 (as
    every other command), not a traceback."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "ssl_jax.evaluate.pictures", f"--workdir={tmp_path / 'none'}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    assert lines[0].startswith("error: ") and "not an ssl_jax pretraining workdir" in lines[0]
