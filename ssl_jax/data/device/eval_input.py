"""What every evaluator feeds the model (`Encoder.normalize`, `uint8_feature_fn`, `RowEmbedder`, the
probe's augmented images): uint8 images in the model input of pretraining (jnp).
"""

import jax.numpy as jnp

from ssl_jax.data.device.recipe import to_model_input
from ssl_jax.data.recipe_ops import FLOAT_OPS


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
