"""The features of the run being trained: its model's jitted feature function, a labelled split's
features, and the evaluators' context (`EvalContext`) the loop builds once.

`exp` is the loop's experiment (`train.build_experiment`): what is read of it is its config, mesh,
model (`exp.ctx.model`) and fresh-state initialiser (`exp.init_state`).
"""

from __future__ import annotations

from typing import Any

import jax

from ssl_jax.evaluate.encoder import features_apply, split_features, uint8_feature_fn
from ssl_jax.evaluate.evaluators import EvalContext


def features_fn(exp: Any, *, stages: bool = False):
    """jitted uint8 images → backbone features (eval-mode BN, online weights); `stages`: every
    stage's pooled output, concatenated (`ResNet.__call__`)."""
    return uint8_feature_fn(
        features_apply(exp.ctx.model, stages=stages), exp.config.data, exp.config
    )


def extract_features(
    exp: Any, variables, split: str, limit: int = -1, *, batch_size: int, stages=False
):
    """Features and labels of a labelled split, every example once (padding masked out); `stages`:
    every stage's pool concatenated (`features_fn`), else the pooled last stage."""
    return split_features(
        features_fn(exp, stages=stages),
        variables,
        exp.config,
        split,
        mesh=exp.mesh,
        batch_size=batch_size,
        limit=limit,
    )


def eval_context(exp: Any, workdir: str) -> EvalContext:
    """What the evaluators need of this run; the feature functions are jitted once here. The
    'random init' variables are those of the run's fresh state (its seed), made on first call."""

    def random_init() -> dict:
        state = exp.init_state(jax.random.PRNGKey(exp.config.seed))
        return {"params": state.params, "batch_stats": state.batch_stats}

    return EvalContext(
        mesh=exp.mesh,
        feature_fn=features_fn(exp),
        stage_feature_fn=features_fn(exp, stages=True),
        random_init=random_init,
        workdir=workdir,
    )
