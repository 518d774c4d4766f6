"""ResNet forward (eval and train mode) against a plain-torch torchvision-layout ResNet.

The flax variables are copied into the torch model with `flax_to_torchvision_state_dict` (strict
load), so this also checks the name/layout mapping the exporter uses. Even input sizes catch
'SAME'-style asymmetric padding at stride 2, odd ones the floor in torch's output-size formula.
"""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import traverse_util
from model_testutil import max_rel_err, random_variables

torch = pytest.importorskip("torch", reason="torch not installed (pip install torch==2.13.0)")

from torch_resnet import TorchResNet  # noqa: E402

from ssl_jax.models.resnet import ResNet  # noqa: E402
from ssl_jax.models.torch_names import flax_to_torchvision_state_dict  # noqa: E402

TOL = 1e-4
_TORCH_LAYER = re.compile(r"^layer(\d+)\.(\d+)$")
_MODULE_FROM_TORCH = {"downsample.0": "downsample_conv", "downsample.1": "downsample_bn"}


def _torchvision_state_dict_to_flax(
    state_dict: dict,
) -> tuple[dict, dict]:
    """Inverse of `flax_to_torchvision_state_dict` for the backbone: `(params, batch_stats)`,
    written independently of it (the round trip checks the exporter's names and layouts).

    `fc.*` and `num_batches_tracked` entries are dropped. Values may be numpy arrays or CPU torch
    tensors (anything `np.asarray` accepts).
    """
    params: dict[tuple[str, ...], np.ndarray] = {}
    stats: dict[tuple[str, ...], np.ndarray] = {}
    for key, value in state_dict.items():
        if key.startswith("fc.") or key.endswith("num_batches_tracked"):
            continue
        value = np.asarray(value)
        *parts, leaf = key.split(".")
        modules: list[str] = []
        i = 0
        while i < len(parts):
            pair = ".".join(parts[i : i + 2])
            if _TORCH_LAYER.match(pair):
                modules.append(pair.replace(".", "_"))
                i += 2
            elif pair in _MODULE_FROM_TORCH:
                modules.append(_MODULE_FROM_TORCH[pair])
                i += 2
            else:
                modules.append(parts[i])
                i += 1
        path = tuple(modules)
        if leaf == "weight" and value.ndim == 4:
            params[(*path, "kernel")] = value.transpose(2, 3, 1, 0).astype(np.float32)
        elif leaf == "weight" and value.ndim == 2:
            params[(*path, "kernel")] = value.T.astype(np.float32)
        elif leaf == "weight" and value.ndim == 1:
            params[(*path, "scale")] = value.astype(np.float32)
        elif leaf == "bias":
            params[(*path, "bias")] = value.astype(np.float32)
        elif leaf == "running_mean":
            stats[(*path, "mean")] = value.astype(np.float32)
        elif leaf == "running_var":
            stats[(*path, "var")] = value.astype(np.float32)
        else:
            raise ValueError(f"no ssl_jax name for torch key {key!r}")
    return traverse_util.unflatten_dict(params), traverse_util.unflatten_dict(stats)


def _torch_model(depth, stem, width, channels, variables):
    model = TorchResNet(depth=depth, stem=stem, width=width, in_chans=channels)
    sd = flax_to_torchvision_state_dict(variables["params"], variables["batch_stats"], 7)
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in sd.items()}, strict=True)
    return model


# Train-mode BN over few values per channel (ResNet-50's layer4 is 1x1 at 32x32) amplifies float32
# rounding to ~1e-4 in any implementation (torch float32 vs float64 differs by as much), so the
# deep / tiny cases compare in float64 on both sides; one well-conditioned case runs float32.
# The XLA backend optimisation level only changes compile time (this file's main cost), not maths.
FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


@pytest.mark.parametrize(
    "depth, width, stem, n, size, channels, dtype, with_eval",
    [
        # even size: catches 'SAME' padding (asymmetric at stride 2)
        (18, 0.5, "imagenet", 4, 32, 3, "float64", True),
        # odd size: the floor in torch's output-size formula
        (18, 0.25, "imagenet", 4, 33, 3, "float64", False),
        # CIFAR stem, 1 input channel, float32 end to end
        (18, 0.5, "cifar", 4, 28, 1, "float32", True),
        # the stride-2 3x3 stem without max-pool (export's STEM_LAYERS['stride2']), odd size
        (18, 0.25, "stride2", 3, 27, 1, "float64", True),
        (50, 0.25, "imagenet", 2, 32, 3, "float64", False),
    ],
)
def test_matches_torch(depth, width, stem, n, size, channels, dtype, with_eval):
    torch.set_num_threads(2)
    with jax.enable_x64(dtype == "float64"):
        jdtype = jnp.dtype(dtype)
        model = ResNet(depth=depth, stem=stem, width=width, dtype=jdtype)
        variables = random_variables(model, (n, size, size, channels), seed=size, dtype=jdtype)
        x = np.random.default_rng(size).normal(size=(n, size, size, channels))
        x = x.astype(np.float32).astype(dtype)

        def run(v, x):
            # eval mode in two cases only (its BN path is shared): each mode is a ResNet compile
            eval_out = model.apply(v, x, train=False) if with_eval else None
            train_out, state = model.apply(v, x, train=True, mutable=["batch_stats"])
            return eval_out, train_out, state["batch_stats"]

        eval_out, train_out, new_stats = jax.jit(run, compiler_options=FAST_COMPILE)(
            variables, jnp.asarray(x)
        )
        eval_out, train_out, new_stats, variables = jax.device_get(
            (eval_out, train_out, new_stats, variables)
        )

    tmodel = _torch_model(depth, stem, width, channels, variables).to(getattr(torch, dtype))
    xt = torch.from_numpy(x.transpose(0, 3, 1, 2).copy())
    with torch.no_grad():
        if with_eval:
            tmodel.eval()
            ref_eval = tmodel(xt).numpy()
        tmodel.train()
        ref_train = tmodel(xt).numpy()
    assert train_out.shape == ref_train.shape == (n, model.feature_dim)
    assert train_out.dtype == np.float32
    assert max_rel_err(train_out, ref_train) <= TOL
    if eval_out is not None:
        assert max_rel_err(eval_out, ref_eval) <= TOL

    # running statistics after one training step (momentum 0.1, unbiased variance)
    ours = flax_to_torchvision_state_dict(variables["params"], new_stats)
    ref = tmodel.state_dict()
    for key in ref:
        if key.endswith(("running_mean", "running_var")):
            assert max_rel_err(ours[key], ref[key].numpy()) <= TOL, key


def test_state_dict_round_trip_and_torchvision_keys():
    model = ResNet(depth=50, width=0.25)
    variables = random_variables(model, (1, 32, 32, 3), seed=3)
    sd = flax_to_torchvision_state_dict(variables["params"], variables["batch_stats"], 5)
    ref = TorchResNet(depth=50, width=0.25).state_dict()
    assert set(sd) == set(ref)
    for key, value in ref.items():
        assert sd[key].shape == tuple(value.shape), key
        assert str(sd[key].dtype) == str(value.dtype).removeprefix("torch."), key
    assert int(sd["layer1.0.bn1.num_batches_tracked"]) == 5
    assert "layer1.0.downsample.0.weight" in sd and "layer1.0.downsample.1.running_var" in sd

    params, stats = _torchvision_state_dict_to_flax({**sd, "fc.weight": np.zeros((10, 512))})
    jax.tree.map(np.testing.assert_array_equal, params, jax.device_get(variables["params"]))
    jax.tree.map(np.testing.assert_array_equal, stats, jax.device_get(variables["batch_stats"]))

    # an SSLModel-style tree is accepted (its backbone subtree is used)
    nested = flax_to_torchvision_state_dict(
        {"backbone": variables["params"], "projector": {}},
        {"backbone": variables["batch_stats"]},
    )
    assert set(nested) == set(sd)
