"""Every method, picked by `config.method`. A new method: its module, its configs, one line here."""

from ssl_jax.methods import ir, mocov2

METHODS = {
    "mocov2": mocov2,
    "ir": ir,
}
