"""ReSSL (Zheng et al., NeurIPS 2021), SCE's relational baseline, on SCE's machinery.

Same networks, views, queue, shuffle-BN, multi-crop and EMA timing as `methods/sce.py` (see its
docstring); only the pair loss differs: `losses.ressl`, the cross-entropy between the target's
relations to the queue `softmax(k·Qᵀ/τ_m)` and the online ones `softmax(q·Qᵀ/τ)`, with no positive
column (eztorch `compute_ressl_loss`, solo-learn `ressl_loss_func`, the authors' code). Defaults:
τ = 0.1, τ_m = 0.04 (ReSSL paper / solo-learn), asymmetric (weak view → target).
`methods/ressl_authors.py` is this method with the authors' EMA timing (before the keys).
"""

from __future__ import annotations

import dataclasses

from ssl_jax.config_checks import hp_field
from ssl_jax.methods import common, losses
from ssl_jax.methods.sce import (  # noqa: F401  (the method interface, shared with SCE)
    EMA_BEFORE_KEYS,
    USES_TARGET,
    buffer_metrics,
    buffer_specs,
    check_config,
    init_buffers,
    loss_fn,
    update_buffers,
)


@dataclasses.dataclass(frozen=True)
class Hparams(common.QueryKeyBN):
    temperature: float = hp_field(0.1, low=0.0, low_open=True)
    temperature_m: float = hp_field(0.04, low=0.0, low_open=True)
    queue_size: int = hp_field(65536, low=1)
    symmetric: bool = False
    num_global_crops: int = hp_field(2, low=1)

    def pair_loss(self, query, key, queue):
        return losses.ressl(query, key, queue, self.temperature, self.temperature_m)
