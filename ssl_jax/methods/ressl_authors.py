"""ReSSL as its authors ran it (Zheng et al., NeurIPS 2021; KyleZheng1997/ReSSL, now
mingkai-zheng/ReSSL): `methods/ressl.py` with the key encoder's EMA BEFORE the keys.

The authors' `network/ressl.py` `ReSSL.forward` calls `_momentum_update_key_encoder()` inside the
step, before the key encoder's forward (MoCo's order), so the keys of step t come from
`EMA(target_{t-1}, online_t)`; SCE's reproduction of ReSSL (`methods/ressl.py`, the `ressl_*`
configs) updates the target after the optimiser step (`on_train_batch_end`). Everything else — the
loss (`losses.ressl`), the views, the queue, shuffle-BN and the `Hparams` — is `methods/ressl.py`'s:
this module re-exports its functions and changes only `EMA_BEFORE_KEYS`.

What the timing changes: the EMA before step t's keys and the EMA after step t−1's optimiser update
both give `target_t = m·target_{t−1} + (1−m)·online_t`, so with a CONSTANT momentum (the authors'
m 0.999 / 0.99) the keys, the loss and the training are the same under both timings. They differ
(a) with a momentum schedule, whose value for the update feeding step t's keys is `m_t` here and
`m_{t−1}` after the optimiser, and (b) in the target saved with the state (what the export's
`--weights=target` and the jobs' `encoder.weights='target'` read): here it lags by one update.

Why a module and not a config key: the engine (`train.make_train_step`) reads the EMA timing from
the method module (`Method.EMA_BEFORE_KEYS`, `methods/common.py`), a static property every method
declares and `tests/methods/test_protocol.py` checks. A second registry entry keeps that protocol
as it is (no config-dependent branch in the engine, no new key in `ressl`'s `Hparams` that every
other method would lack) and makes the timing visible in `config.method` itself:
`method='ressl'` is SCE's reproduction, `method='ressl_authors'` the authors' order.
Configs: `ressl_authors_imagenet.py`, `ressl_authors_cifar10.py`.
"""

from __future__ import annotations

from ssl_jax.methods.ressl import (  # noqa: F401  (the method interface, shared with ReSSL/SCE)
    USES_TARGET,
    Hparams,
    buffer_metrics,
    buffer_specs,
    check_config,
    init_buffers,
    loss_fn,
    update_buffers,
)

EMA_BEFORE_KEYS = True  # authors' `ReSSL.forward`: momentum update, then the keys (as MoCo)
