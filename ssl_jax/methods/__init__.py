"""Every method, picked by `config.method`. A new method: its module, its configs, one line here.

A module that leaves out `build_model`, `prepare_buffers` or `buffer_metrics` gets the default of
`common.DEFAULTS` (`common.with_defaults`, below).
"""

from ssl_jax.methods import (
    cmc,
    cmcring,
    cmcv2,
    common,
    infomin,
    interclr,
    ir,
    iring,
    jcl,
    mocoring,
    mocov2,
    ressl,
    ressl_authors,
    sce,
    supervised,
)

METHODS = {
    "mocov2": mocov2,
    "ir": ir,
    "jcl": jcl,
    "sce": sce,
    "ressl": ressl,
    "ressl_authors": ressl_authors,  # ReSSL with the authors' EMA timing (before the keys)
    "interclr": interclr,  # MoCo v2 + an inter-image branch on a clustered feature bank
    "cmc": cmc,
    "cmcv2": cmcv2,
    "infomin": infomin,
    "iring": iring,  # IR with ring negatives (CNCE)
    "mocoring": mocoring,  # MoCo v2 with ring negatives (CNCE)
    "cmcring": cmcring,  # CMC with ring negatives on each cross-view bank (ours: no code exists)
    "supervised": supervised,  # not self-supervised: the labels' cross-entropy, a ceiling row
}

for _method in METHODS.values():
    common.with_defaults(_method)
