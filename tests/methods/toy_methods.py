"""Two toy methods that exercise the engine's method protocol the way InterCLR and CMC will:

- `prepared_bank`: IR's loss on a bank that `prepare_buffers` fills with the projections of the
  whole train split before step 0 (never on resume), with buffers as a nested pytree (two banks,
  an int32 label bank sharded on `data`, a replicated centroid table, a counter of preparations).
- `two_encoder`: a model of two ResNets, one per channel split of the input (CMC's L / ab), whose
  `features` are the concatenation of both; the loss is IR's on the concatenated projections.

Test-only modules: registered in `methods.METHODS` with `monkeypatch.setitem`.
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

from ssl_jax.methods import common, ir, losses, memory
from ssl_jax.models import backbone_only, build_head
from ssl_jax.parallel.sharding import DATA_AXIS

NUM_CENTROIDS = 4
PREPARE_CALLS = []  # one entry per prepare_buffers call in this process


# --------------------------------------------------------------------------------------------------
# prepared_bank


class PreparedBank:
    EMA_BEFORE_KEYS = False
    USES_TARGET = False
    Hparams = ir.Hparams
    check_config = staticmethod(ir.check_config)
    build_model = staticmethod(common.build_model)

    @staticmethod
    def buffer_specs(ctx):
        return {
            "banks": memory.ROWS,  # a prefix: both banks sharded by rows
            "labels": P(DATA_AXIS),
            "centroids": P(),
            "prepared": P(),
        }

    @staticmethod
    def init_buffers(rng, ctx):
        n, d = ctx.hp.bank_size, ctx.embed_dim
        a, b = jax.random.split(rng)
        return {
            "banks": {"query": memory.random_rows(a, n, d), "spare": memory.random_rows(b, n, d)},
            "labels": jnp.full((n,), -1, jnp.int32),
            "centroids": jnp.zeros((NUM_CENTROIDS, d), jnp.float32),
            "prepared": jnp.zeros((), jnp.int32),
        }

    @staticmethod
    def prepare_buffers(ctx, state, embedder):
        PREPARE_CALLS.append(int(jax.device_get(state.step)))
        model = ctx.model

        def embed(variables, x):
            return losses.l2_normalize(model.apply(variables, x, train=False)["projection"])

        variables = {"params": state.params, "batch_stats": state.batch_stats}
        bank = embedder.embed_rows(state.buffers["banks"]["query"], embed, variables)
        buffers = dict(state.buffers)
        buffers["banks"] = {**buffers["banks"], "query": bank}
        buffers["prepared"] = buffers["prepared"] + 1
        return state.replace(buffers=buffers)

    @staticmethod
    def loss_fn(ctx, params, batch_stats, inp):
        ir_inp = inp.replace(buffers={"bank": inp.buffers["banks"]["query"]})
        return ir.loss_fn(ctx, params, batch_stats, ir_inp)

    @staticmethod
    def update_buffers(ctx, inp, updates):
        ir_inp = inp.replace(buffers={"bank": inp.buffers["banks"]["query"]})
        bank = ir.update_buffers(ctx, ir_inp, updates)["bank"]
        buffers = dict(inp.buffers)
        buffers["banks"] = {**buffers["banks"], "query": bank}
        buffers["labels"] = memory.write_rows(
            buffers["labels"][:, None], inp.batch["index"], inp.batch["label"][:, None], ctx.mesh
        )[:, 0]
        return buffers

    @staticmethod
    def buffer_metrics(ctx, buffers):
        return {"labelled_rows": jnp.sum(buffers["labels"] >= 0)}


# --------------------------------------------------------------------------------------------------
# two_encoder


class TwoEncoderModel(nn.Module):
    """Two ResNets on the channel splits [0:1] and [1:3] of the input (CMC's L / ab), one projector
    on the concatenated features."""

    l_encoder: nn.Module
    ab_encoder: nn.Module
    projector: nn.Module

    ENCODERS = ("l_encoder", "ab_encoder")

    @property
    def feature_dim(self) -> int:
        return self.l_encoder.feature_dim + self.ab_encoder.feature_dim

    def features(self, x, train: bool = False, bn_groups: int = 1):
        return jnp.concatenate(
            [
                self.l_encoder(x[..., :1], train, bn_groups),
                self.ab_encoder(x[..., 1:], train, bn_groups),
            ],
            axis=-1,
        )

    def __call__(
        self, x, train: bool, bn_groups: int = 1, use_predictor: bool = True, head_bn_groups=None
    ):
        features = self.features(x, train, bn_groups)
        head_groups = bn_groups if head_bn_groups is None else head_bn_groups
        return {"features": features, "projection": self.projector(features, train, head_groups)}


@dataclasses.dataclass(frozen=True)
class TwoEncoderHparams(ir.Hparams):
    pass


class TwoEncoder:
    EMA_BEFORE_KEYS = False
    USES_TARGET = False
    Hparams = TwoEncoderHparams
    check_config = staticmethod(ir.check_config)
    buffer_specs = staticmethod(ir.buffer_specs)
    init_buffers = staticmethod(ir.init_buffers)
    prepare_buffers = staticmethod(common.prepare_buffers)
    loss_fn = staticmethod(ir.loss_fn)
    update_buffers = staticmethod(ir.update_buffers)
    buffer_metrics = staticmethod(common.no_buffer_metrics)

    @staticmethod
    def build_model(config):
        half = dict(config.model.to_dict(), width=config.model.width / 2)
        return TwoEncoderModel(
            l_encoder=backbone_only(half),
            ab_encoder=backbone_only(half),
            projector=build_head(config.model.projector),
        )
