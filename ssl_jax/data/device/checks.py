"""`data.device_crops`, checked before anything compiles: the canvas side a config uses and the
recipes that may cut their views on the device (`canvas.cut_views`).
"""

import ml_collections

from ssl_jax.config_checks import ConfigError, check_range

# Geometry `canvas.cut_views` does not run (it runs a leading random_resized_crop, flips).
_OTHER_GEOMETRY = ("resize", "center_crop", "jigsaw", "rand_augment")


def device_crop_side(data: ml_collections.ConfigDict) -> int:
    """The canvas side the pipeline uses: `data.device_crops` where `data.device_ops` is on (a
    derived config that turns the device ops off, e.g. the linear probe's, gets host crops), else 0."""
    return int(data.get("device_crops", 0) or 0) if data.get("device_ops", False) else 0


def check_device_crops(data: ml_collections.ConfigDict) -> None:
    """`data.device_crops` (canvas side, 0 = off) needs `data.device_ops` and recipes whose geometry
    is a leading `random_resized_crop` and flips (the ops `canvas.cut_views` runs)."""
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
