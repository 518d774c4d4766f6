"""Conv2d: the im2col-matmul and dense-matrix paths equal XLA's convolution (values and gradients),
'auto' picks them only for tiny CPU maps, a ResNet's parameters and outputs do not depend on the
implementation, and the CPU fusion barrier is the identity that XLA keeps."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from model_testutil import max_rel_err, random_variables

from ssl_jax.models import build_model, conv, head_config
from ssl_jax.models.conv import (
    CPU_DENSE_MAX_INPUT,
    CPU_MATMUL_MAX_OUTPUT,
    Conv2d,
    dense_conv,
    fusion_barrier,
    matmul_conv,
    resolve_impl,
    tap_layout,
    uses_fusion_barrier,
)
from ssl_jax.models.resnet import ResNet


def _xla_conv(x, kernel, strides, padding):
    return jax.lax.conv_general_dilated(
        x, kernel, strides, padding, dimension_numbers=("NHWC", "HWIO", "NHWC")
    )


@pytest.mark.parametrize(
    "size, k, stride, pad",
    [(7, 3, 1, 1), (8, 3, 2, 1), (7, 3, 2, 1), (2, 3, 1, 1), (1, 3, 1, 1), (9, 7, 2, 3),
     (6, 1, 2, 0), (5, 1, 1, 0), (10, 3, 1, 0)],
)  # fmt: skip
@pytest.mark.parametrize("impl", [matmul_conv, dense_conv], ids=["matmul", "dense"])
def test_conv_equals_xla_conv_with_gradients(impl, size, k, stride, pad):
    rng = np.random.default_rng(size * 100 + k * 10 + stride)
    with jax.enable_x64(True):
        x = jnp.asarray(rng.normal(size=(3, size, size + 1, 4)))
        kernel = jnp.asarray(rng.normal(size=(k, k, 4, 5)))
        cotangent = None
        outs, grads = [], []
        for conv in (_xla_conv, impl):
            f = lambda x, w, conv=conv: conv(x, w, (stride, stride), ((pad, pad), (pad, pad)))
            y = f(x, kernel)
            if cotangent is None:
                cotangent = jnp.asarray(rng.normal(size=y.shape))
            outs.append(y)
            grad = jax.grad(lambda x, w, f=f, c=cotangent: jnp.sum(f(x, w) * c), (0, 1))
            grads.append(jax.jit(grad)(x, kernel))
        assert outs[0].shape == outs[1].shape
        np.testing.assert_allclose(outs[1], outs[0], rtol=1e-10, atol=1e-10)
        for g_impl, g_xla in zip(grads[1], grads[0], strict=True):
            np.testing.assert_allclose(g_impl, g_xla, rtol=1e-10, atol=1e-10)


def test_tap_layout_of_a_2px_map():
    # 2x2 input, 3x3 kernel, stride 1, pad 1: every input pixel meets every output pixel through
    # tap (iy - oy + 1, ix - ox + 1); stride 2 onto one output pixel: only taps (1..2, 1..2).
    layout = tap_layout((2, 2), (3, 3), (1, 1), ((1, 1), (1, 1)))
    for p, q in np.ndindex(4, 4):
        (iy, ix), (oy, ox) = divmod(p, 2), divmod(q, 2)
        assert layout[p][q] == (iy - oy + 1) * 3 + (ix - ox + 1)
    assert tap_layout((2, 2), (3, 3), (2, 2), ((1, 1), (1, 1))) == ((4,), (5,), (7,), (8,))
    assert tap_layout((2, 2), (1, 1), (2, 2), ((0, 0), (0, 0))) == ((0,), (-1,), (-1,), (-1,))


def test_resolve_impl():
    on_cpu = jax.default_backend() == "cpu"
    tiny = {True: "dense", False: "xla"}[on_cpu]
    assert resolve_impl("auto", (1, 1), (3, 3), (1, 1)) == tiny
    assert resolve_impl("auto", (2, 2), (3, 3), (2, 2)) == tiny  # CPU_DENSE_MAX_INPUT = 4
    assert CPU_DENSE_MAX_INPUT == 4
    # a 1x1 kernel on a 2-px map: the dense matrix would be 4x im2col's work
    assert resolve_impl("auto", (2, 2), (1, 1), (1, 1)) == ("matmul" if on_cpu else "xla")
    assert resolve_impl("auto", (3, 3), (3, 3), (2, 2)) == ("matmul" if on_cpu else "xla")
    assert resolve_impl("auto", (4, 4), (3, 3), (CPU_MATMUL_MAX_OUTPUT + 1, 1)) == "xla"
    assert resolve_impl("matmul", (56, 56), (3, 3), (56, 56)) == "matmul"
    assert resolve_impl("dense", (7, 7), (3, 3), (7, 7)) == "dense"
    assert resolve_impl("xla", (1, 1), (3, 3), (1, 1)) == "xla"
    with pytest.raises(ValueError, match="conv impl must be one of"):
        resolve_impl("cudnn", (1, 1), (3, 3), (1, 1))


def test_conv2d_parameter_is_flax_conv_kernel():
    x = jnp.ones((2, 5, 5, 3))
    variables = Conv2d(8, (3, 3), padding=((1, 1), (1, 1))).init(jax.random.key(0), x)
    assert jax.tree.map(jnp.shape, variables) == {"params": {"kernel": (3, 3, 3, 8)}}


def test_resnet_does_not_depend_on_conv_impl():
    # 32 px, ImageNet stem: stages at 8, 4, 2, 1 px, so 'auto' mixes both paths on CPU. float64:
    # train-mode BN over 4 images at 1 px amplifies float32 rounding (see test_resnet_torch.py).
    shape = (4, 32, 32, 3)
    with jax.enable_x64(True):
        model = ResNet(depth=18, stem="imagenet", width=0.25, dtype=jnp.float64)
        variables = random_variables(model, shape, seed=1, dtype=jnp.float64)
        x = jnp.asarray(np.random.default_rng(2).normal(size=shape))
        outs = {}
        for impl in ("xla", "auto"):  # the matmul path alone: the test above
            model = ResNet(depth=18, stem="imagenet", width=0.25, dtype=jnp.float64, conv_impl=impl)
            init = jax.eval_shape(lambda x, m=model: m.init(jax.random.key(0), x, train=False), x)
            assert jax.tree.map(jnp.shape, init) == jax.tree.map(jnp.shape, variables)

            def loss(params, m=model):
                y, _ = m.apply(
                    {"params": params, "batch_stats": variables["batch_stats"]},
                    x,
                    train=True,
                    mutable=["batch_stats"],
                )
                return jnp.sum(y**2), y

            (_, y), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(variables["params"])
            outs[impl] = (y, grads)
        for impl in ("auto",):
            assert max_rel_err(outs[impl][0], outs["xla"][0]) < 1e-9
            errs = jax.tree.map(max_rel_err, outs[impl][1], outs["xla"][1])
            assert max(jax.tree.leaves(errs)) < 1e-8, errs


def test_build_model_rejects_unknown_conv_impl():
    cfg = dict(backbone="resnet18", conv_impl="fft", projector=head_config((8,), 4))
    with pytest.raises(ValueError, match="model.conv_impl must be one of"):
        build_model(cfg)
    with pytest.raises(ValueError, match="conv_impl"):
        ResNet(depth=18, conv_impl="fft")


def _barrier_case(monkeypatch, barrier: bool, min_size: int = 8 * 8 * 8 * 16):
    """(compiled HLO text, value and gradients) of a loss through an XLA conv whose input is an
    element-wise chain (two ReLUs and a residual add, as in a ResNet block)."""
    monkeypatch.setattr(conv, "CPU_FUSION_BARRIER", barrier)
    monkeypatch.setattr(conv, "CPU_FUSION_BARRIER_MIN_SIZE", min_size)  # the input's: 8·8·8·16
    model = Conv2d(16, (3, 3), padding=((1, 1), (1, 1)), impl="xla")
    x = jnp.asarray(np.random.default_rng(0).normal(size=(8, 8, 8, 16)), jnp.float32)
    variables = model.init(jax.random.key(0), x)

    def loss(variables, x, s):
        h = jax.nn.relu(x * s + 1.0)
        return jnp.sum(jnp.sin(model.apply(variables, jax.nn.relu(h * s + x))))

    step = jax.jit(jax.value_and_grad(loss, (0, 1)))
    return step.lower(variables, x, 0.5).compile().as_text(), step(variables, x, 0.5)


def _fused_computations_with(hlo: str, *ops: str) -> list[str]:
    bodies = re.findall(r"^%(fused\S*) .*?\{\n(.*?)\n\}", hlo, flags=re.S | re.M)
    return [name for name, body in bodies if all(f" {op}(" in body for op in ops)]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the barrier is a CPU-only fix")
def test_fusion_barrier_stops_xla_cpu_recomputing_a_conv_input_in_its_transpose(monkeypatch):
    # Without the barrier XLA:CPU fuses the ReLU chain into the kernel gradient's transpose of the
    # conv input (what the barrier is for; if this XLA stops doing it, the barrier can go). With
    # it, the conditional survives compilation, no fusion both transposes and recomputes a ReLU,
    # and values and gradients are bit-identical.
    plain_hlo, plain = _barrier_case(monkeypatch, False)
    assert _fused_computations_with(plain_hlo, "transpose", "maximum")
    hlo, out = _barrier_case(monkeypatch, True)
    assert " conditional(" in hlo
    assert _fused_computations_with(hlo, "transpose", "maximum") == []
    jax.tree.map(np.testing.assert_array_equal, out, plain)


def test_fusion_barrier_is_the_identity_on_both_branches():
    x = jnp.asarray(np.random.default_rng(0).normal(size=(2, 3, 3, 4)), jnp.float32)
    x = x.at[0, 0, 0, 0].set(-0.0)
    cotangent = jnp.arange(x.size, dtype=jnp.float32).reshape(x.shape)
    for anchor in (jnp.ones(3), jnp.array([jnp.nan, 1.0]), jnp.array([jnp.inf])):
        y, vjp = jax.vjp(lambda x, a=anchor: fusion_barrier(x, a), x)
        np.testing.assert_array_equal(y, x)
        assert jnp.signbit(y[0, 0, 0, 0])
        np.testing.assert_array_equal(vjp(cotangent)[0], cotangent)


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the barrier is a CPU-only fix")
def test_fusion_barrier_only_on_conv_inputs_of_at_least_the_min_size(monkeypatch):
    # The barrier gains on big maps only and costs time on small ones: below the size no
    # conditional is compiled in, at it one is.
    monkeypatch.setattr(conv, "CPU_FUSION_BARRIER_MIN_SIZE", 8 * 8 * 8 * 16)
    assert uses_fusion_barrier((8, 8, 8, 16)) and not uses_fusion_barrier((8, 8, 8, 15))
    monkeypatch.setattr(conv, "CPU_FUSION_BARRIER", False)
    assert not uses_fusion_barrier((8, 8, 8, 16))
    hlo, _ = _barrier_case(monkeypatch, True, min_size=8 * 8 * 8 * 16 + 1)
    assert " conditional(" not in hlo
