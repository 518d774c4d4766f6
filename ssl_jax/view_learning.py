"""InfoMin's learned views (Tian et al. 2020, Sec. 4.2, appendix B.5): learn a pixel-wise invertible
colour space g (`models.flow.PixelFlow`), freeze it, then run CMC on its channel split.

No public code exists (PyContrast #35–#37); this follows the paper's text:

- **unsupervised** (Eq. 2): `min_g max_{f1,f2} I_NCE(g(X)_1; g(X)_{2:3})`. The critic f1, f2 (one
  small ConvNet per view, L2-normalised 64-d embeddings) minimises the in-batch InfoNCE loss L
  (symmetric, τ `temperature`), so I_NCE = log B − L; g maximises L.
- **supervised**: only Eq. 3's label terms, `min_{g,c1,c2} CE(c1(g(X)_1), y) + CE(c2(g(X)_{2:3}), y)`
  on the labelled images (classifiers c1, c2 read the views directly, as in Eq. 3).
- **semi-supervised** (Eq. 3): both; the I_NCE term on an unlabelled batch of the whole train
  split, the label terms on a labelled batch of the first `num_labelled` images (the paper's STL-10:
  5k labelled of 105k).
Adam, lr 2e-4 for g (and c1, c2) and 6e-4 for the critic, as appendix B.5 gives them (its text also
says g's rate "should be larger" than the critic's; the numbers say the opposite, and we use the
numbers); each side has its own Adam state over its own parameters, so neither side's step moves
the other's. One critic step and one generator step per iteration, on the same batch.

The input space X is RGB (standardised with `data.mean/std`) or a CMC colour space (`base`, e.g.
'ydbdr', normalised as `data/color.py`). `data.device.flow_views.save_flow` writes g with its input
space and the per-channel mean/std of g(X) on training images; the device op `{'op':
'learned_flow', 'path': ...}` (`data.device.colour.learned_flow`) reads it, so a CMC config whose
recipe ends with it trains on g's views (`configs/cmc_color_fashion_mnist.py:flow=PATH`). Run:

    python -m ssl_jax.view_learning --config=configs/views/color_fashion_mnist.py \
        --workdir=runs/views/semi [--config.mode=unsupervised|supervised|semi|raw]

which writes `flow.npz`, `metrics.jsonl` (I_NCE, losses, classifier accuracies) and `views.png`
(what g does to images: the input, g's three channels and its two views). `mode='raw'` learns
nothing: g stays a fresh flow, the identity, so its views are the base space's own split (R | GB
from RGB, Y | DbDr from YDbDr): Table 5's "raw views", run through the same op as the learned ones.

`estimate_i_nce` measures I_NCE(v1; v2) of any views with a held-out critic (the view studies of
`experiments/view_studies.py`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
from flax import linen as nn
from flax import traverse_util

from ssl_jax.data import color
from ssl_jax.data.device.flow_views import FlowViews, apply_flow, load_flow, save_flow, to_base
from ssl_jax.models.flow import PixelFlow

MODES = ("unsupervised", "supervised", "semi")
RAW = "raw"  # no view learning: g stays the identity (a fresh flow)
BASES = ("rgb", *color.SPACES)


# --------------------------------------------------------------------------------------------------
# Networks and losses of the view-learning stage


class SmallConvNet(nn.Module):
    """Critic / classifier trunk: conv 3×3 (32) → conv 3×3 s2 (64) → conv 3×3 s2 (128), ReLUs,
    global average pool, Dense(`out`). No BN (the critic's batches are also g's adversary)."""

    out: int

    @nn.compact
    def __call__(self, x: jnp.ndarray) -> jnp.ndarray:
        for width, stride in ((32, 1), (64, 2), (128, 2)):
            x = nn.relu(nn.Conv(width, (3, 3), strides=stride)(x))
        return nn.Dense(self.out)(jnp.mean(x, axis=(1, 2)))


class Nets(nn.Module):
    """g (`flow`), the critic (f1 on view 1, f2 on view 2) and the classifiers (c1, c2)."""

    flow: PixelFlow
    embed_dim: int = 64
    num_classes: int = 10

    def setup(self):
        self.f1, self.f2 = SmallConvNet(self.embed_dim), SmallConvNet(self.embed_dim)
        self.c1, self.c2 = SmallConvNet(self.num_classes), SmallConvNet(self.num_classes)

    def __call__(self, x):  # init only: touch every sub-network
        v1, v2 = PixelFlow.split(self.flow(x))
        return self.f1(v1), self.f2(v2), self.c1(v1), self.c2(v2)

    def views(self, x):
        return PixelFlow.split(self.flow(x))

    def critic(self, v1, v2):
        return self.f1(v1), self.f2(v2)

    def classify(self, v1, v2):
        return self.c1(v1), self.c2(v2)


def nce_loss(z1: jnp.ndarray, z2: jnp.ndarray, temperature: float) -> jnp.ndarray:
    """Symmetric in-batch InfoNCE of paired embeddings `[B, d]` (normalised inside): the mean of
    CE(z1·z2ᵀ/τ, diag) and its transpose. I_NCE = log B − this."""
    z1 = z1 / jnp.linalg.norm(z1, axis=-1, keepdims=True)
    z2 = z2 / jnp.linalg.norm(z2, axis=-1, keepdims=True)
    logits = z1 @ z2.T / temperature
    labels = jnp.arange(z1.shape[0])
    ce = optax.softmax_cross_entropy_with_integer_labels
    return 0.5 * (jnp.mean(ce(logits, labels)) + jnp.mean(ce(logits.T, labels)))


class Critic(nn.Module):
    """The I_NCE approximator alone: f1 on view 1, f2 on view 2 (`SmallConvNet`s, any channels)."""

    embed_dim: int = 64

    @nn.compact
    def __call__(self, v1, v2):
        return SmallConvNet(self.embed_dim, name="f1")(v1), SmallConvNet(self.embed_dim, name="f2")(
            v2
        )


def estimate_i_nce(
    train_pairs,
    test_pairs,
    *,
    steps: int,
    eval_batches: int,
    lr: float,
    temperature: float,
    seed=0,
    return_params: bool = False,
) -> dict:
    """I_NCE(v1; v2) = log K − L with a held-out critic: a fresh `Critic` trained with Adam (`lr`)
    for `steps` batches of `train_pairs` to minimise the in-batch InfoNCE loss L (`nce_loss`), then
    L averaged over `eval_batches` batches of `test_pairs` (images it never saw); K = the batch size.
    The pairs are iterators of `(v1, v2)` arrays `[K, H, W, C1]`, `[K, H, W, C2]`. Returns
    `{'i_nce': held-out, 'i_nce_train': the last training batch's, 'log_k': log K}`, and with
    `return_params` the trained critic as `'critic'`: `(Critic(), params)` (a representation, when
    the study's encoder is the critic itself)."""
    v1, v2 = next(train_pairs)
    critic = Critic()
    params = critic.init(jax.random.PRNGKey(seed), v1, v2)
    tx = optax.adam(lr)
    opt = tx.init(params)

    def loss(params, v1, v2):
        return nce_loss(*critic.apply(params, v1, v2), temperature)

    @jax.jit
    def step(params, opt, v1, v2):
        value, grads = jax.value_and_grad(loss)(params, v1, v2)
        updates, opt = tx.update(grads, opt, params)
        return optax.apply_updates(params, updates), opt, value

    value = loss(params, v1, v2)
    for _ in range(steps):
        params, opt, value = step(params, opt, *next(train_pairs))
    held_out = jax.jit(loss)
    losses, k = [], None
    for _ in range(eval_batches):
        v1, v2 = next(test_pairs)
        k = v1.shape[0]
        losses.append(float(held_out(params, v1, v2)))
    log_k = float(np.log(k if k is not None else v1.shape[0]))
    result = {
        "i_nce": log_k - float(np.mean(losses)),
        "i_nce_train": log_k - float(value),
        "log_k": log_k,
    }
    return {**result, "critic": (critic, params)} if return_params else result


def _side(name: str) -> str:
    """'gen' for g and the classifiers (Eq. 3's min side), 'critic' for f1, f2 (the max side)."""
    return "gen" if name in ("flow", "c1", "c2") else "critic"


class ViewSteps(NamedTuple):
    """`make_step`'s functions. The optimiser state `opt` is `{'gen': ..., 'critic': ...}`: one Adam
    per side over that side's parameters only (its moments and step count exist for them alone), so
    a critic step leaves g, c1, c2 bit-identical and a generator step leaves f1, f2 bit-identical."""

    init: Callable  # params -> opt
    critic: Callable  # (params, opt, x_u) -> (params, opt, {'i_nce'})
    generator: Callable  # (params, opt, x_u, x_l, y_l) -> (params, opt, {'loss_g'[, 'ce', 'acc']})
    step: Callable  # (params, opt, x_u, x_l, y_l) -> (params, opt, metrics): critic then generator


def make_step(
    nets: Nets, mode: str, temperature: float, lr_g: float, lr_critic: float
) -> ViewSteps:
    """One iteration's critic and generator updates (`ViewSteps`); `x_u` unlabelled and `x_l`,
    `y_l` labelled model inputs in g's base space. The critic step is skipped in 'supervised'."""
    if mode not in MODES:
        raise ValueError(f"mode={mode!r}; allowed: {MODES}")
    label = lambda params: traverse_util.path_aware_map(  # noqa: E731
        lambda path, _: _side(path[1]), params
    )
    txs = {
        side: optax.multi_transform({side: optax.adam(lr), other: optax.set_to_zero()}, label)
        for side, other, lr in (("gen", "critic", lr_g), ("critic", "gen", lr_critic))
    }
    ce = optax.softmax_cross_entropy_with_integer_labels

    def init(params):
        return {side: tx.init(params) for side, tx in txs.items()}

    def update(side, params, opt, grads):
        updates, state = txs[side].update(grads, opt[side], params)
        moved = optax.apply_updates(params, updates)
        params = {  # the other side as it was, bit for bit
            "params": {
                k: moved["params"][k] if _side(k) == side else v
                for k, v in params["params"].items()
            }
        }
        return params, {**opt, side: state}

    def nce(params, x):
        v1, v2 = nets.apply(params, x, method=Nets.views)
        return nce_loss(*nets.apply(params, v1, v2, method=Nets.critic), temperature)

    def supervised(params, x, y):
        v1, v2 = nets.apply(params, x, method=Nets.views)
        l1, l2 = nets.apply(params, v1, v2, method=Nets.classify)
        acc = 0.5 * (jnp.mean(l1.argmax(-1) == y) + jnp.mean(l2.argmax(-1) == y))
        return jnp.mean(ce(l1, y)) + jnp.mean(ce(l2, y)), acc

    def critic(params, opt, x_u):  # maximise I_NCE (minimise its loss) on fresh g views
        loss_c, grads = jax.value_and_grad(nce)(params, x_u)
        params, opt = update("critic", params, opt, grads)
        return params, opt, {"i_nce": jnp.log(x_u.shape[0]) - loss_c}

    def generator(params, opt, x_u, x_l, y_l):
        def gen_loss(params):
            total, aux = 0.0, {}
            if mode != "supervised":
                total = -nce(params, x_u)  # g minimises I_NCE
            if mode != "unsupervised":
                sup, acc = supervised(params, x_l, y_l)
                total, aux = total + sup, {"ce": sup, "acc": acc}
            return total, aux

        (loss_g, aux), grads = jax.value_and_grad(gen_loss, has_aux=True)(params)
        params, opt = update("gen", params, opt, grads)
        return params, opt, {**aux, "loss_g": loss_g}

    def step(params, opt, x_u, x_l, y_l):
        metrics = {}
        if mode != "supervised":
            params, opt, metrics = critic(params, opt, x_u)
        params, opt, aux = generator(params, opt, x_u, x_l, y_l)
        return params, opt, {**metrics, **aux}

    return ViewSteps(init, jax.jit(critic), jax.jit(generator), jax.jit(step))


# --------------------------------------------------------------------------------------------------
# The stage as a run


def _batches(config, subset: int, seed_offset: int):
    """Endless (model input in g's base space, labels) batches of RRC + flip crops of the first
    `subset` training images (0: all), from the library's input pipeline (with
    `config.data.pipeline = 'device'`: `pipeline.device_train_iterator`, without TensorFlow)."""
    from ssl_jax.data import device_pipeline, pipeline
    from ssl_jax.data.device import canvas
    from ssl_jax.data.device import recipe as device_recipe

    c = ml_collections.ConfigDict(config.to_dict())
    c.data.train_subset = subset
    c.data.views = ("crop",)
    size = c.data.image_size
    c.data.recipes = ml_collections.ConfigDict(
        {
            "crop": (
                {"op": "random_resized_crop", "size": size, "scale": tuple(config.crop_scale)},
                {"op": "horizontal_flip", "p": 0.5},
            )
        }
    )
    c.seed = config.seed + seed_offset
    on_device = device_pipeline.resolve(c) == "device"
    batches = pipeline.device_train_iterator(c) if on_device else pipeline.train_iterator(c)
    for batch in batches:
        view = canvas.batch_views(c.data, batch)[0]
        rgb = device_recipe.normalize(view, (0.0,) * 3, (1.0,) * 3)
        yield to_base(rgb, config.base, config.data.mean, config.data.std), batch["label"]


def learn_views(config: ml_collections.ConfigDict, workdir: str) -> str:
    """Train g as `config.mode` says, write `workdir/flow.npz` (+ metrics.jsonl, views.png);
    returns the flow's path."""
    if config.mode not in (*MODES, RAW):
        raise ValueError(f"config.mode={config.mode!r}; allowed: {(*MODES, RAW)}")
    if config.base not in BASES:
        raise ValueError(f"config.base={config.base!r}; allowed: {BASES}")
    if config.data.channels != 3:
        raise ValueError("view learning splits 3 channels: config.data.channels must be 3")
    os.makedirs(workdir, exist_ok=True)
    flow = PixelFlow(
        num_blocks=config.flow.num_blocks,
        hidden=tuple(config.flow.hidden),
        volume_preserving=config.flow.volume_preserving,
    )
    nets = Nets(flow, num_classes=config.num_classes)
    subset = config.num_labelled if config.mode == "supervised" else config.data.train_subset
    unlabelled = _batches(config, subset, 0)
    with_labels = config.mode in ("supervised", "semi")
    labelled = _batches(config, config.num_labelled, 1) if with_labels else None
    x0, y0 = next(unlabelled)
    params = nets.init(jax.random.PRNGKey(config.seed), x0)
    num_steps = 0 if config.mode == RAW else config.steps
    if num_steps:
        steps = make_step(nets, config.mode, config.temperature, config.lr_g, config.lr_critic)
        opt = steps.init(params)
    log = open(os.path.join(workdir, "metrics.jsonl"), "w")
    start = time.time()
    for i in range(num_steps):
        x_u, _ = next(unlabelled)
        x_l, y_l = next(labelled) if labelled is not None else (x0, y0)  # unused
        params, opt, metrics = steps.step(params, opt, x_u, x_l, y_l)
        if (i + 1) % config.log_every == 0 or i + 1 == num_steps:
            row = {"step": i + 1, **{k: float(v) for k, v in metrics.items()}}
            log.write(json.dumps(row) + "\n")
            log.flush()
            shown = " | ".join(f"{k} {v:.4f}" for k, v in row.items() if k != "step")
            print(
                f"views step {i + 1}/{num_steps} | {shown} | {time.time() - start:.0f}s",
                flush=True,
            )
    log.close()
    g_params = {"params": params["params"]["flow"]}
    outs = [flow.apply(g_params, next(unlabelled)[0]) for _ in range(4)]
    out = jnp.concatenate([o.reshape(-1, 3) for o in outs])
    views = FlowViews(
        flow,
        g_params,
        config.base,
        tuple(config.data.mean),
        tuple(config.data.std),
        tuple(float(v) for v in jnp.mean(out, 0)),
        tuple(float(v) for v in jnp.std(out, 0) + 1e-6),
    )
    path = save_flow(os.path.join(workdir, "flow.npz"), views)
    load_flow.cache_clear()
    picture(config, views, os.path.join(workdir, "views.png"))
    return path


def picture(config, views: FlowViews, out: str, rows: int = 6) -> str:
    """What g does: per image, the input, g(X)'s three channels (standardised) and its two views."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ssl_jax.data import datasets

    images = datasets.first_images(config.data, config.data.train_split, rows)
    images = np.stack(images).astype(np.float32) / 255.0
    y = np.asarray(apply_flow(views, jnp.asarray(images)))
    titles = ["input", "g(X)₁", "g(X)₂", "g(X)₃", "view 1", "view 2 (as RG)"]
    fig, axes = plt.subplots(rows, len(titles), figsize=(1.6 * len(titles), 1.6 * rows))
    for r in range(rows):
        cells = [images[r], *(y[r, :, :, c] for c in range(3)), y[r, :, :, 0]]
        v2 = np.concatenate([y[r, :, :, 1:], np.zeros_like(y[r, :, :, :1])], -1)
        cells.append(np.clip(0.5 + 0.2 * v2, 0, 1))
        for c, cell in enumerate(cells):
            ax = axes[r][c]
            ax.imshow(cell, cmap=None if cell.ndim == 3 else "gray")
            ax.set_xticks([])
            ax.set_yticks([])
            if r == 0:
                ax.set_title(titles[c], fontsize=8)
    fig.suptitle(f"learned views: {config.mode}, from {config.base}", fontsize=10)
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return out


def main(argv) -> None:
    del argv
    from absl import flags

    from ssl_jax.output import progress

    progress.quiet_logs(verbose=flags.FLAGS["verbosity"].present > 0)
    learn_views(_CONFIG.value, _WORKDIR.value)


if __name__ == "__main__":
    from absl import app, flags
    from ml_collections import config_flags

    _CONFIG = config_flags.DEFINE_config_file("config", None, "view-learning config file")
    _WORKDIR = flags.DEFINE_string("workdir", None, "output folder")
    flags.mark_flags_as_required(["config", "workdir"])
    app.run(main)
