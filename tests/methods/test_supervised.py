"""The supervised ceiling against numpy: `loss = mean_i -log softmax(z_i)[y_i]` of the projector's
logits and the batch's labels, accuracy the share of argmax hits; a real 2-step run trains on the
labels (the loss falls on a batch it sees twice); bad heads are refused by the config check."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from configs import supervised_fashion_mnist
from ssl_jax import train
from ssl_jax.config_checks import ConfigError
from ssl_jax.methods import common, supervised
from ssl_jax.parallel import sharding

B, C = 16, 10


class LinearStub:
    """A 'model' whose logits are the flattened view times params['w']."""

    def apply(self, variables, x, train, bn_groups, head_bn_groups, use_predictor, mutable):
        del train, bn_groups, head_bn_groups, use_predictor, mutable
        logits = x.reshape(x.shape[0], -1) @ variables["params"]["w"]
        return {"projection": logits}, {"batch_stats": variables["batch_stats"]}


def np_cross_entropy(logits, labels):
    z = np.asarray(logits, np.float64)
    z = z - z.max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-np.mean(log_p[np.arange(len(labels)), labels]))


def test_loss_and_accuracy_equal_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(B, 4, 4, 1)).astype(np.float32)
    w = rng.normal(size=(16, C)).astype(np.float32)
    labels = rng.integers(0, C, size=B).astype(np.int32)
    ctx = common.StepContext(
        model=LinearStub(),
        mesh=sharding.make_mesh(jax.devices()),
        config=None,
        hp=supervised.Hparams(num_classes=C),
        num_train_examples=B,
        total_steps=1,
        steps_per_epoch=1,
    )
    inp = common.StepInput(
        step=jnp.zeros((), jnp.int32),
        rng=jax.random.PRNGKey(0),
        views=(jnp.asarray(x),),
        batch={"label": jnp.asarray(labels), "index": jnp.arange(B)},
        buffers={},
    )
    loss, out = supervised.loss_fn(ctx, {"w": jnp.asarray(w)}, {}, inp)
    logits = x.reshape(B, -1) @ w
    np.testing.assert_allclose(float(loss), np_cross_entropy(logits, labels), rtol=1e-5)
    np.testing.assert_allclose(
        float(out.metrics["accuracy"]), np.mean(logits.argmax(1) == labels), rtol=1e-6
    )
    assert supervised.update_buffers(ctx, inp, None) == {}


def test_a_real_run_learns_the_labels(tmp_path):
    """Two steps on one repeated batch (`train_subset` = the batch): the loss falls."""
    config = supervised_fashion_mnist.get_config("runlocal")
    config.data.train_subset = config.global_batch_size
    config.total_steps, config.log_every_steps = 4, 1
    config.optim.base_lr = 0.5
    config.evals = type(config.evals)()
    from ssl_jax.output.writers import read_metrics

    train.train_and_evaluate(config, str(tmp_path))
    losses = [r["train/loss"] for r in read_metrics(str(tmp_path)) if "train/loss" in r]
    assert len(losses) == 4 and losses[-1] < losses[0]


def test_the_classifier_must_be_as_wide_as_the_classes():
    config = supervised_fashion_mnist.get_config("runlocal")
    config.model.projector.out_dim = 128
    with pytest.raises(ConfigError, match="out_dim=128.*num_classes=10"):
        train.build_experiment(config)
