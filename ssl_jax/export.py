"""Export a pretrained backbone for PyTorch: a torchvision `state_dict` or a Detectron2 pickle.

```
python -m ssl_jax.export --workdir=W --format=torchvision --out=r50.pth [--head=PROBE_OUT]
python -m ssl_jax.export --workdir=W --format=detectron2 --out=r50.pkl
```
`--workdir` is a pretraining workdir (latest checkpoint) or one checkpoint folder
(`W/checkpoints/<step>`); `--weights=target` exports the EMA / momentum encoder instead of the
online one.

- torchvision: `torch.save` of `{key: tensor}` with torchvision's ResNet names and layouts (conv
  OIHW; BN `weight`, `bias`, `running_mean`, `running_var`, `num_batches_tracked` = the training
  step). No `fc` unless `--head` names a linear-probe workdir (its `probe_head.npz` becomes
  `fc.weight [C, D]`, `fc.bias [C]`). A stock `torchvision.models.resnetNN()` takes it only
  for a 3-channel ImageNet-stem run at width 1, and then with `m.fc = torch.nn.Identity()`: the
  export prints, and writes beside the weights as `<out without extension>.json`
  (`loading_facts`), the lines that build the run's model and load it with `strict=True` (the
  `conv1` of its input channels and stem, no `maxpool` for the CIFAR stem, the stages rebuilt at
  another width, `fc`) and its input: NCHW float32, `(pixels / 255 - mean) / std` with the run's
  `data.mean` / `data.std`, or the colour space a CMC-like recipe converts to.
- detectron2: the pickle MoCo's `detection/convert-pretrain-to-detectron2.py` writes:
  `{"model": {name: float32 numpy array}, "__author__": "ssl_jax", "matching_heuristics": True}`,
  names from the torchvision ones by its rules (`layer1..4` → `res2..5`, `bn1..3` → `conv1..3.norm`,
  `downsample.0` → `shortcut`, `downsample.1` → `shortcut.norm`, stem `conv1` / `bn1` →
  `stem.conv1` / `stem.conv1.norm`), without `num_batches_tracked`; only for what Detectron2's
  `build_resnet_backbone` builds (one ResNet with the ImageNet stem at width 1, 1 or 3 channels,
  pixel input). The `.json` also gets `detectron2_options`, the `KEY VALUE` lines its network
  needs, printed with the `python -m ssl_jax.detection` command that fine-tunes from it (`configs/detectron2/*.yaml`, docs/evaluation.md).

A model of several ResNet encoders (`model.ENCODERS`, e.g. CMC's one per colour split) is exported
one torchvision file per encoder, `encoder_path(out, name)` (`enc.pth` → `enc.<name>.pth`, with its
own `enc.<name>.json`), and says so; such a model has no Detectron2 export (each encoder reads its
own input channels).

Files are written to a temporary name in the same folder and renamed: never half-written.
"""

from __future__ import annotations

import json
import os
import pickle

import numpy as np

from ssl_jax.models import BACKBONES
from ssl_jax.models.resnet import STAGES, STEM_CONVS, base_width
from ssl_jax.models.torch_names import flax_to_torchvision_state_dict

FORMATS = ("torchvision", "detectron2")


class ExportError(ValueError):
    """The checkpoint cannot be exported in the requested format; the message says why."""


def encoder_names(encoder) -> tuple[str, ...]:
    """The model's ResNet encoders (`model.ENCODERS`): one for most methods, two for CMC-like
    models (one per colour split)."""
    return tuple(encoder.model.ENCODERS)


def torchvision_state_dict(
    encoder, head: dict | None = None, *, name: str | None = None
) -> dict[str, np.ndarray]:
    """`{torchvision key: numpy array}` of one ResNet of an `Encoder` (`name` in `ENCODERS`; default
    the only one) (+ `fc` from a probe head `{'kernel': [D, C], 'bias': [C]}`)."""
    import jax

    names = encoder_names(encoder)
    if name is None:
        if len(names) != 1:
            raise ExportError(f"the model has {len(names)} encoders {list(names)}: name one")
        name = names[0]
    if name not in names:
        raise ExportError(f"encoder {name!r} is not one of the model's {list(names)}")
    if head is not None and len(names) != 1:
        raise ExportError(
            f"--head: the probe head reads the concatenated features of {len(names)} encoders; "
            "a torchvision ResNet has one (export without --head)"
        )
    variables = jax.device_get(encoder.encoder_variables()[name])
    sd = flax_to_torchvision_state_dict(
        variables["params"], variables["batch_stats"], num_batches_tracked=encoder.step
    )
    if head is not None:
        kernel, bias = np.asarray(head["kernel"]), np.asarray(head["bias"])
        if (
            kernel.ndim != 2
            or kernel.shape[0] != encoder.feature_dim
            or bias.shape != kernel.shape[1:]
        ):
            raise ExportError(
                f"the probe head has kernel {kernel.shape} / bias {bias.shape}, "
                f"but the backbone's features have {encoder.feature_dim} dimensions: "
                "the head belongs to another encoder"
            )
        sd["fc.weight"] = np.ascontiguousarray(kernel.T.astype(np.float32))
        sd["fc.bias"] = bias.astype(np.float32)
    return sd


def detectron2_name(key: str) -> str:
    """Detectron2 name of a torchvision ResNet key (MoCo's converter rules)."""
    if "layer" not in key:
        key = "stem." + key
    for t in (1, 2, 3, 4):
        key = key.replace(f"layer{t}", f"res{t + 1}")
    for t in (1, 2, 3):
        key = key.replace(f"bn{t}", f"conv{t}.norm")
    key = key.replace("downsample.0", "shortcut")
    return key.replace("downsample.1", "shortcut.norm")


PRETRAIN_FOR_DETECTRON2 = (
    "pretrain a ResNet-18/34/50 with --config.model.stem=imagenet --config.model.width=1 "
    "(as the grid detection_cpu does) for Detectron2, or export --format=torchvision"
)


def detectron2_checkpoint(encoder) -> dict:
    """The Detectron2 pickle's content for an `Encoder`: one ResNet with the ImageNet stem at width 1
    (the networks Detectron2's `build_resnet_backbone` builds) on 1- or 3-channel pixels."""
    if len(encoder_names(encoder)) != 1:
        raise ExportError(
            f"the model has {len(encoder_names(encoder))} encoders {list(encoder_names(encoder))}, "
            "each on its own input channels; Detectron2 feeds one ResNet. "
            "Export --format=torchvision (one file per encoder) instead."
        )
    model, data = encoder.config.model, encoder.config.data
    if model.stem != "imagenet":
        raise ExportError(
            "Detectron2's ResNet has the ImageNet stem (7x7/2 conv + max-pool); "
            f"this run uses config.model.stem={model.stem!r}, which Detectron2 cannot build: "
            + PRETRAIN_FOR_DETECTRON2
        )
    resnet = getattr(encoder.model, encoder_names(encoder)[0])
    stem_width = int(model.get("stem_width", 0) or 0)
    if float(resnet.width) != 1.0 or stem_width not in (0, TORCHVISION_BASE):
        raise ExportError(
            "Detectron2's ResNet has a 64-channel stem and stages of 64-512 (ResNet-18/34) or "
            f"256-2048 (ResNet-50) channels; this run uses config.model.width={resnet.width:g}"
            + (f", stem_width={stem_width}" if stem_width else "")
            + ", which Detectron2 cannot build: "
            + PRETRAIN_FOR_DETECTRON2
        )
    if int(data.channels) not in (1, 3):
        raise ExportError(
            "Detectron2 feeds grey (INPUT.FORMAT L) or 3-channel images; this run was trained on "
            f"config.data.channels={data.channels}. Export --format=torchvision."
        )
    from ssl_jax.data.device.eval_input import eval_ops

    ops = eval_ops(data)
    if ops:
        raise ExportError(
            f"this run's encoder reads {ops[-1]['op']} input, which Detectron2's preprocessing "
            "((pixels - MODEL.PIXEL_MEAN) / MODEL.PIXEL_STD) cannot compute. "
            "Export --format=torchvision."
        )
    sd = torchvision_state_dict(encoder)
    weights = {
        detectron2_name(k): np.asarray(v, np.float32)
        for k, v in sd.items()
        if not k.endswith("num_batches_tracked")
    }
    return {"model": weights, "__author__": "ssl_jax", "matching_heuristics": True}


# The stems of `models/resnet.py` as torch modules: conv1 (kernel, stride, padding), max-pool or None.
STEM_LAYERS = {
    stem: (
        dict(zip(("kernel_size", "stride", "padding"), conv, strict=True)),
        {"kernel_size": 3, "stride": 2, "padding": 1} if stem == "imagenet" else None,
    )
    for stem, conv in STEM_CONVS.items()
}
# channels of torchvision's stem and first stage
TORCHVISION_BASE = 64


def facts_path(out: str) -> str:
    """`enc.pth` → `enc.json`: where the export writes how to load `out`."""
    return os.path.splitext(out)[0] + ".json"


def _model_input(encoder, lo: int, hi: int) -> dict:
    """Channels `[lo, hi)` of the model input: what they are, their mean/std and layout."""
    from ssl_jax.data import color
    from ssl_jax.data.device.eval_input import eval_ops

    data = encoder.config.data
    ops = eval_ops(data)
    if not ops:
        return {
            "input": "pixels",
            "mean": [float(v) for v in tuple(data.mean)[lo:hi]],
            "std": [float(v) for v in tuple(data.std)[lo:hi]],
            "layout": "NCHW float32, x = (uint8 pixels / 255 - mean) / std per channel",
        }
    by_ssl_jax = (
        f"no torchvision transform computes it; ssl_jax does: "
        f"ssl_jax.load_encoder({encoder.checkpoint!r}).normalize(uint8 RGB [N, H, W, 3])"
        f"[..., {lo}:{hi}], transposed to NCHW"
    )
    if ops[-1]["op"] == "color_space":
        space = color.check_space(ops[-1]["space"])
        return {
            "input": f"color_space:{space.name}",
            "mean": list(space.mean[lo:hi]),
            "std": list(space.std[lo:hi]),
            "layout": (
                f"NCHW float32, channels {lo}:{hi} of {space.name} normalised by its mean / std "
                f"(ssl_jax.data.device.color_spaces.convert(RGB pixels / 255, {space.name!r})): "
                f"{by_ssl_jax}"
            ),
        }
    return {
        "input": ops[-1]["op"],
        "mean": None,
        "std": None,
        "layout": f"NCHW float32, channels {lo}:{hi} of the learned colour space: {by_ssl_jax}",
    }


def _torchvision_lines(f: dict, depth: int) -> list[str]:
    """Python lines that build the torchvision ResNet of facts `f`, load `f['file']` strictly and
    run it on `images` (uint8 NCHW) → `features` (or `logits` with a head)."""
    conv, pool, base, stem_c = f["conv1"], f["maxpool"], f["base_channels"], f["stem_channels"]
    num_classes = f["num_classes"]
    lines = ["import torch", "import torchvision", f"m = torchvision.models.{f['backbone']}()"]
    if (conv["in_channels"], conv["kernel_size"], stem_c) != (3, 7, TORCHVISION_BASE):
        lines.append(
            f"m.conv1 = torch.nn.Conv2d({conv['in_channels']}, {stem_c}, "
            f"kernel_size={conv['kernel_size']}, stride={conv['stride']}, "
            f"padding={conv['padding']}, bias=False)"
        )
    if stem_c != TORCHVISION_BASE:
        lines.append(f"m.bn1 = torch.nn.BatchNorm2d({stem_c})")
    if pool is None:
        lines.append("m.maxpool = torch.nn.Identity()")
    if base != TORCHVISION_BASE or stem_c != TORCHVISION_BASE:  # layer1 reads the stem
        kind, blocks = STAGES[depth]
        block = {"basic": "BasicBlock", "bottleneck": "Bottleneck"}[kind]
        lines += [
            f"# width {f['width']}: stages of {base}, {2 * base}, {4 * base}, {8 * base} channels "
            "(torchvision has no width multiplier)",
            f"m.inplanes = {stem_c}",
        ]
        for i, n in enumerate(blocks):
            stride = 1 if i == 0 else 2
            lines.append(
                f"m.layer{i + 1} = m._make_layer(torchvision.models.resnet.{block}, "
                f"{base * 2**i}, {n}, stride={stride})"
            )
    fc = (
        f"torch.nn.Linear({f['feature_dim']}, {num_classes})"
        if num_classes
        else "torch.nn.Identity()"
    )
    lines += [
        f"m.fc = {fc}",
        f"m.load_state_dict(torch.load({f['file']!r}), strict=True)",
        "m.eval()",
    ]
    c, size, out = conv["in_channels"], f["input_size"], "logits" if num_classes else "features"
    dims = f"[N, {num_classes}]" if num_classes else f"[N, {f['feature_dim']}]"
    if f["input"] == "pixels":
        lines += [
            f"mean = torch.tensor({f['mean']}).view(1, -1, 1, 1)",
            f"std = torch.tensor({f['std']}).view(1, -1, 1, 1)",
            f"# images: uint8 [N, {c}, {size}, {size}] (NCHW); {out}: {dims}",
            "with torch.no_grad():",
            f"    {out} = m((images.float() / 255 - mean) / std)",
        ]
    else:
        lines += [
            f"# x: float32 [N, {c}, {size}, {size}] (see 'layout'); {out}: {dims}",
            "with torch.no_grad():",
            f"    {out} = m(x)",
        ]
    return lines


def loading_facts(
    encoder, fmt: str, out: str, *, name: str | None = None, num_classes: int = 0
) -> dict:
    """How to load the file `out` that holds ResNet `name` (default: the only one) of `encoder`,
    as the export prints it and writes it to `facts_path(out)`: the architecture (backbone, width,
    stem, conv1 / maxpool specs), the input (channels, mean / std, layout, size), where the weights
    come from, and for torchvision the Python lines that build and load it (`strict=True`).
    `input_channels` `[lo, hi]`: the channels of the model input this ResNet reads (all but for a
    model of several encoders)."""
    import jax

    names = encoder_names(encoder)
    name = name or names[0]
    # conv1 kernels are HWIO: each encoder reads the next I channels of the model input
    kernels = {
        n: jax.device_get(encoder.encoder_variables()[n]["params"]["conv1"]["kernel"]).shape
        for n in names
    }
    lo = sum(kernels[n][2] for n in names[: names.index(name)])
    k, _, c_in, stem_c = kernels[name]
    resnet = getattr(encoder.model, name)
    conv, pool = STEM_LAYERS[resnet.stem]
    if conv["kernel_size"] != k:
        raise ExportError(f"{name}: conv1 is {k}x{k}, not the {resnet.stem} stem's")
    data = encoder.config.data
    facts = {
        "format": fmt,
        "file": out,
        "encoder": name,
        "backbone": f"resnet{resnet.depth}",
        "width": float(resnet.width),
        "stem": resnet.stem,
        "in_channels": int(c_in),
        "input_channels": [lo, lo + int(c_in)],
        "stem_channels": int(stem_c),
        "base_channels": base_width(resnet.width),
        "feature_dim": int(resnet.feature_dim),
        "conv1": {"in_channels": int(c_in), "out_channels": int(stem_c), **conv, "bias": False},
        "maxpool": pool,
        **_model_input(encoder, lo, lo + int(c_in)),
        "input_size": int(data.image_size),
        "eval_crop_fraction": float(data.eval_crop_fraction),
        "num_classes": int(num_classes),
        "step": int(encoder.step),
        "weights": encoder.weights,
        "checkpoint": encoder.checkpoint,
    }
    if fmt == "torchvision":
        facts["python"] = _torchvision_lines(facts, resnet.depth)
    return facts


def _short(values) -> list[float]:
    return [float(f"{v:.6g}") for v in values]


def describe(facts: dict) -> str:
    """The printed form of `loading_facts`: its Python lines (torchvision) and its input."""
    size, fraction = facts["input_size"], facts["eval_crop_fraction"]
    lines = [f"load {facts['file']} in PyTorch (also in {facts_path(facts['file'])}):"]
    lines += [f"  {line}" for line in facts.get("python", ())]
    norm = f", mean {_short(facts['mean'])}, std {_short(facts['std'])}" if facts["mean"] else ""
    lines.append(
        f"input: {facts['layout']}{norm}; {size} px as pretraining's eval view (shorter side "
        f"resized to {round(size / fraction)}, centre crop {size})"
    )
    return "\n".join(lines)


def _write_facts(facts: dict) -> None:
    def write(tmp):
        with open(tmp, "w") as f:
            json.dump(facts, f, indent=1)
            f.write("\n")

    _atomic_write(facts_path(facts["file"]), write)


def _atomic_write(out: str, write) -> None:
    folder = os.path.dirname(os.path.abspath(out))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(out)}.tmp{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def export(
    path: str, fmt: str, out: str, *, head: str | None = None, weights: str = "online"
) -> str | list[str]:
    """Write the backbone of the run at `path` (workdir or checkpoint folder) to `out`; a model of
    several encoders (`model.ENCODERS`) is written one file per encoder, `encoder_path(out, name)`,
    and the list of paths is returned."""
    from ssl_jax.evaluate.encoder import load_encoder

    if fmt not in FORMATS:
        raise ExportError(f"--format={fmt!r} is not known; allowed: {list(FORMATS)}")
    if os.path.splitext(out)[1] == ".json":
        raise ExportError(f"--out={out!r}: the export writes how to load it to <out>.json")
    if head and fmt != "torchvision":
        raise ExportError("--head is only for --format=torchvision (Detectron2 has no classifier)")
    if fmt == "torchvision":
        try:
            import torch
        except ImportError as e:
            raise ExportError(
                "--format=torchvision needs PyTorch (pip install 'ssl_jax[torch]')"
            ) from e
    probe_head = None
    if head:
        from ssl_jax.evaluate.linear_probe import load_head

        try:
            probe_head = load_head(head)
        except FileNotFoundError as e:
            raise ExportError(str(e)) from e
    encoder = load_encoder(path, weights=weights)
    backbone = encoder.config.model.backbone
    if backbone not in BACKBONES:
        raise ExportError(
            f"the run's backbone is {backbone!r}; the torchvision and Detectron2 formats hold "
            f"ResNets only ({sorted(BACKBONES)}): use ssl_jax.load_encoder({path!r}) in JAX"
        )
    names = encoder_names(encoder)
    if fmt == "torchvision" and len(names) > 1:
        return _export_each_encoder(encoder, out, names, probe_head, torch)
    if fmt == "torchvision":
        sd = torchvision_state_dict(encoder, probe_head)
        facts = loading_facts(encoder, fmt, out, num_classes=len(sd.get("fc.bias", ())))
        tensors = {k: torch.from_numpy(np.array(v, copy=True)) for k, v in sd.items()}
        _atomic_write(out, lambda tmp: torch.save(tensors, tmp))
        _write_facts(facts)
        print(f"wrote {len(sd)} tensors (torchvision names) of step {encoder.step} to {out}")
        print(describe(facts))
    else:
        ckpt = detectron2_checkpoint(encoder)
        facts = loading_facts(encoder, fmt, out)

        def write(tmp):
            with open(tmp, "wb") as f:
                pickle.dump(ckpt, f)

        _atomic_write(out, write)
        facts["detectron2_options"] = detectron2_options(encoder, out)
        _write_facts(facts)
        print(
            f"wrote {len(ckpt['model'])} arrays (Detectron2 names) of step {encoder.step} "
            f"to {out}\nfine-tune: python -m ssl_jax.detection --config-file "
            f"configs/detectron2/<config>.yaml {facts['detectron2_options']}"
        )
    return out


def detectron2_options(encoder, out: str) -> str:
    """The `KEY VALUE` overrides a Detectron2 config needs for the pickle `out` of `encoder`: the
    weights, the ResNet's depth and res2 width (and for bottlenecks the stride on the 3x3 conv,
    torchvision's v1.5), the input format (L for grey, RGB) and the run's mean / std in
    0-255 units."""
    depth = int(getattr(encoder.model, encoder_names(encoder)[0]).depth)
    data = encoder.config.data
    basic = depth in (18, 34)
    options = [
        f"MODEL.WEIGHTS {out}",
        f"MODEL.RESNETS.DEPTH {depth}",
        f"MODEL.RESNETS.RES2_OUT_CHANNELS {64 if basic else 256}",
    ]
    if not basic:
        options.append("MODEL.RESNETS.STRIDE_IN_1X1 False")
    mean = ",".join(f"{255 * m:.3f}".rstrip("0").rstrip(".") for m in data.mean)
    std = ",".join(f"{255 * s:.3f}".rstrip("0").rstrip(".") for s in data.std)
    options += [
        f"INPUT.FORMAT {'L' if int(data.channels) == 1 else 'RGB'}",
        f"MODEL.PIXEL_MEAN [{mean}]",
        f"MODEL.PIXEL_STD [{std}]",
    ]
    return " ".join(options)


def encoder_path(out: str, name: str) -> str:
    """`encoder.pth` → `encoder.<name>.pth`: where the export writes each encoder of a model."""
    root, ext = os.path.splitext(out)
    return f"{root}.{name}{ext}"


def _export_each_encoder(encoder, out: str, names, probe_head, torch) -> list[str]:
    """A model of several encoders: one torchvision state_dict per encoder, said on stdout."""
    if probe_head is not None:
        torchvision_state_dict(encoder, probe_head)  # raises: one head, several encoders
    paths, described = [], []
    for name in names:
        sd = torchvision_state_dict(encoder, name=name)
        path = encoder_path(out, name)
        facts = loading_facts(encoder, "torchvision", path, name=name)
        tensors = {k: torch.from_numpy(np.array(v, copy=True)) for k, v in sd.items()}
        _atomic_write(path, lambda tmp, t=tensors: torch.save(t, tmp))
        _write_facts(facts)
        paths.append(path)
        described.append(describe(facts))
    print(
        f"this run's model has {len(names)} encoders ({', '.join(names)}); wrote each "
        f"(torchvision names, step {encoder.step}): {', '.join(paths)}"
    )
    print("\n".join(described))
    return paths


def main(argv) -> None:
    del argv
    from absl import flags

    from ssl_jax.checkpoint import CheckpointError
    from ssl_jax.output import progress

    f = flags.FLAGS
    progress.quiet_logs(verbose=f["verbosity"].present > 0)  # orbax's INFO lines: --verbosity=0
    try:
        export(f.workdir, f.format, f.out, head=f.head, weights=f.weights)
    except (CheckpointError, ExportError, ValueError) as e:
        progress.user_error(e)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from absl import app, flags

    flags.DEFINE_string("workdir", None, "Pretraining workdir or checkpoint folder.")
    flags.DEFINE_enum("format", "torchvision", list(FORMATS), "Output format.")
    flags.DEFINE_string(
        "out",
        None,
        "Output file (.pth for torchvision, .pkl for detectron2); <out without extension>.json "
        "gets how to load it (torchvision: the lines that build the run's ResNet and load it with "
        "strict=True, and its input's mean/std), also printed.",
    )
    flags.DEFINE_string(
        "head", None, "torchvision only: linear-probe workdir whose head becomes fc."
    )
    flags.DEFINE_enum("weights", "online", ["online", "target"], "Online or target (EMA) weights.")
    flags.mark_flags_as_required(["workdir", "out"])
    app.run(main)
