"""Small configs, synthetic batches and the index of the config files shared by the tests."""

import functools
import glob
import os
import subprocess
import sys

import jax
import ml_collections
import numpy as np

from configs import common
from ssl_jax import configs
from ssl_jax.state import state_shardings
from tests.data.data_helpers import make_fashion_dir
from tests.process_env import multi_process_env, xla_flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_RECIPE = (
    {"op": "random_resized_crop", "size": 16, "scale": (0.3, 1.0), "ratio": (3 / 4, 4 / 3)},
    {"op": "horizontal_flip", "p": 0.5},
)


def tiny_config(method: str = "mocov2", **method_config) -> ml_collections.ConfigDict:
    """A seconds-long Fashion-MNIST run: 16-px views, ResNet-18 at width 1/8, batch 16."""
    c = configs.base_config()
    common.fashion_mnist_data(c, channels=1)
    c.method = method
    c.data.image_size = 16
    c.data.train_subset = 64
    c.data.shuffle_buffer = 64
    c.data.recipes = ml_collections.ConfigDict({"tiny": TINY_RECIPE})
    c.model.backbone = "resnet18"
    c.model.stem = "cifar"
    c.model.width = 0.125
    c.model.projector.hidden_dims = (32,)
    c.model.projector.out_dim = 16
    c.global_batch_size = 16
    c.total_steps = 6
    c.optim.base_lr = 0.1
    c.log_every_steps = 1
    c.checkpoint_every_steps = 2
    c.evals = ml_collections.ConfigDict()  # no in-training evaluators unless a test adds them
    if method == "mocov2":
        c.data.views = ("tiny", "tiny")
        c.method_config = ml_collections.ConfigDict(
            dict(
                temperature=0.2,
                queue_size=64,
                shuffle_bn=True,
                query_bn_group_size=0,
                key_bn_group_size=4,
            )
        )
    elif method == "ir":
        c.data.views = ("tiny",)
        c.method_config = ml_collections.ConfigDict(
            dict(temperature=0.07, num_negatives=32, bank_size=64, bank_momentum=0.5)
        )
    c.method_config.update(method_config)
    return c


def synthetic_batch(config, step: int, size: int = 16) -> dict:
    """A deterministic fake batch of uint8 views, shaped like the pipeline's output: `size` px, a
    jigsaw view (its recipe ends with the jigsaw op, InfoMin's third) a mosaic of grid × grid
    patches, its side a multiple of the grid."""
    rng = np.random.default_rng(step)
    b = config.global_batch_size

    def side(view: str) -> int:
        last = (tuple(config.data.recipes.get(view, ())) or ({},))[-1]
        return size - size % last["grid"] if last.get("op") == "jigsaw" else size

    views = tuple(
        rng.integers(0, 256, size=(b, side(v), side(v), config.data.channels), dtype=np.uint8)
        for v in config.data.views
    )
    index = (np.arange(b) + step * b) % config.data.train_subset
    return {"views": views, "index": index.astype(np.int32), "label": (index % 10).astype(np.int32)}


def save_random_workdir(config, workdir: str, *, seed: int = 0, step: int = 7) -> str:
    """A pretraining workdir (config.json + checkpoints/<step>) as `train_and_evaluate` writes it,
    holding a fresh state whose BN scales/biases and running statistics (online and target) are
    randomised — so export/parity checks see non-trivial BN — without compiling a train step."""
    import jax
    import jax.numpy as jnp
    from flax import traverse_util

    from ssl_jax import checkpoint, train

    rng = np.random.default_rng(seed)
    draw = {
        "scale": lambda s: rng.uniform(0.5, 1.5, s),
        "bias": lambda s: rng.normal(0.0, 0.2, s),
        "mean": lambda s: rng.normal(0.0, 0.5, s),
        "var": lambda s: rng.uniform(0.5, 2.0, s),
    }

    def randomise(tree):
        flat = traverse_util.flatten_dict(tree)
        out = {}
        for path, leaf in flat.items():
            if path[-1] in draw:
                value = draw[path[-1]](leaf.shape).astype(np.float32)
                leaf = jax.device_put(value, leaf.sharding)
            out[path] = leaf
        return traverse_util.unflatten_dict(out)

    exp = train.build_experiment(config)
    state = train.init_or_restore(exp, None)
    state = state.replace(
        step=jnp.asarray(step, jnp.int32),
        params=randomise(state.params),
        batch_stats=randomise(state.batch_stats),
        target_params=randomise(state.target_params),
        target_batch_stats=randomise(state.target_batch_stats),
    )
    ckpt = checkpoint.Checkpointer(workdir)
    ckpt.save(state, force=True)
    ckpt.wait()
    checkpoint.write_config(workdir, config)
    return workdir


def write_png_folder(root: str, classes: int, per_class: int, size: int = 20, seed: int = 0):
    """An image folder: `classes` class sub-folders of `per_class` random PNGs (classes == 0: a flat
    folder of `per_class` unlabelled PNGs)."""
    import os

    from PIL import Image

    rng = np.random.default_rng(seed)
    folders = [os.path.join(root, f"class{c}") for c in range(classes)] or [root]
    for c, folder in enumerate(folders):
        os.makedirs(folder, exist_ok=True)
        for i in range(per_class):
            pixels = rng.integers(0, 256, (size, size), dtype=np.uint8) // (c + 1)
            Image.fromarray(pixels).save(os.path.join(folder, f"{i:03d}.png"))
    return root


def place_state(host_state, exp):
    """A host state on `exp`'s mesh with the train step's shardings (buffers by the method's specs)."""
    return jax.device_put(
        host_state, state_shardings(host_state, exp.mesh, exp.method.buffer_specs(exp.ctx))
    )


def one_step_on_all_devices(config, states, batches) -> list:
    """Each host state `states[t]` through ONE train step on all devices with `batches[t]`: the
    `(state, metrics)` pairs, on the host. The 1-vs-8-device check per step, which a trajectory
    cannot give exactly: a pre-activation within rounding of 0 flips a ReLU's mask between
    summation orders, and the gradient is discontinuous there (tests/methods/test_cmc.py)."""
    from ssl_jax import train
    from ssl_jax.parallel import sharding

    exp = train.build_experiment(config, mesh=sharding.make_mesh(jax.devices()))
    step = train.jit_train_step(exp, place_state(states[0], exp))
    return [
        jax.device_get(step(place_state(s, exp), sharding.host_to_global(b, exp.mesh)))
        for s, b in zip(states, batches)
    ]


def assert_steps_match(one_step, states, metrics, metric_keys, buffer_tolerances) -> None:
    """`one_step_on_all_devices`' results against the 1-device run (`states[t + 1]`, `metrics[t]`):
    each metric to 2e-6 relative, each buffer `name` within `buffer_tolerances[name]` (kwargs of
    `assert_allclose`)."""
    for t, (state8, metrics8) in enumerate(one_step):
        for key in metric_keys:
            np.testing.assert_allclose(
                metrics[t][key], metrics8[key], rtol=2e-6, err_msg=f"step {t + 1} {key}"
            )
        for name, tol in buffer_tolerances.items():
            np.testing.assert_allclose(
                states[t + 1].buffers[name],
                state8.buffers[name],
                err_msg=f"step {t + 1} {name}",
                **tol,
            )


def fashion_source(root) -> tuple[str, str]:
    """(a 256 + 64 image Fashion-MNIST folder under `root`, a cache folder there): the source of
    the color_fashion_mnist `:runlocal` runs (generated in a second)."""
    return make_fashion_dir(str(root / "fashion"), num_train=256, num_test=64), str(root / "cache")


def np_normalize(x) -> np.ndarray:
    """Rows L2-normalised in float64."""
    x = np.asarray(x, np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def np_ce0(logits) -> float:
    """Mean cross-entropy of `[B, 1 + K]` logits with the positive at column 0 (float64)."""
    mx = logits.max(axis=1, keepdims=True)
    lse = mx[:, 0] + np.log(np.exp(logits - mx).sum(axis=1))
    return float(np.mean(lse - logits[:, 0]))


def config_names() -> list[str]:
    """The run configs' names (`configs/X.py` → X), sorted: not `__init__` and `common`, nor the old
    names kept one release (`common.RENAMED`)."""
    names = (os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "configs", "*.py")))
    return sorted(n for n in names if n not in ("__init__", "common", *common.RENAMED))


@functools.cache
def runlocal_configs() -> dict[str, ml_collections.ConfigDict]:
    """`{file name: its ':runlocal' config}` of every pretraining file in `configs/` (the eval jobs
    left out), loaded once per pytest run: read them, load again to change one."""
    out = {}
    for name in config_names():
        config = configs.load(os.path.join(ROOT, "configs", f"{name}.py:runlocal"))
        if config.job == "pretrain":
            out[f"{name}.py"] = config
    return out


def config_files_by_method() -> dict[str, list[str]]:
    """`{config.method: [its config file names, sorted]}` over `runlocal_configs()`."""
    out = {}
    for name, config in runlocal_configs().items():
        out.setdefault(config.method, []).append(name)
    return out


def run_main(*args: str, devices: int | None = None, timeout: int = 300):
    """`python -m ssl_jax.main ARGS` to completion in the repository root, stdout and stderr
    apart; `devices`: simulated CPU devices (None: one, as a user's run)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    env["XLA_FLAGS"] = xla_flags(devices)
    return subprocess.run(
        [sys.executable, "-m", "ssl_jax.main", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def error_lines(stderr: str) -> list[str]:
    """stderr without the native libraries' start-up log lines (TensorFlow / XLA): what a user
    error leaves, one `error: ...` line."""
    noise = ("WARNING: All log messages before absl::InitializeLog()",)
    return [
        line
        for line in stderr.splitlines()
        if line.strip()
        and not line.startswith(noise)
        and not (line[:1] in "IWE" and line[1:5].isdigit())
    ]


def localhost_process_env(port: int, process_id: int, **extra) -> dict:
    """The environment of process `process_id` of a 2-process CPU run on localhost (4 devices
    each): what `ssl_jax.parallel.distributed` reads, plus `extra`."""
    return multi_process_env(
        4,
        SSL_JAX_COORDINATOR=f"localhost:{port}",
        SSL_JAX_NUM_PROCESSES="2",
        SSL_JAX_PROCESS_ID=str(process_id),
        JAX_PLATFORMS="cpu",
        TF_CPP_MIN_LOG_LEVEL="2",
        **extra,
    )
