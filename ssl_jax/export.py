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
  `fc.weight [C, D]`, `fc.bias [C]`). Loads with `torchvision.models.resnet50()
  .load_state_dict(sd, strict=False)` (only `fc.*` missing) or strictly with `--head`.
- detectron2: the pickle MoCo's `detection/convert-pretrain-to-detectron2.py` writes:
  `{"model": {name: float32 numpy array}, "__author__": "ssl_jax", "matching_heuristics": True}`,
  names from the torchvision ones by its rules (`layer1..4` → `res2..5`, `bn1..3` → `conv1..3.norm`,
  `downsample.0` → `shortcut`, `downsample.1` → `shortcut.norm`, stem `conv1` / `bn1` →
  `stem.conv1` / `stem.conv1.norm`), without `num_batches_tracked`. Fine-tune with
  `configs/detectron2/*.yaml` (RGB input, ImageNet pixel mean/std in 0-255 units,
  `STRIDE_IN_1X1: False`, SyncBN), see docs/evaluation.md.

A model of several ResNet encoders (`model.ENCODERS`, e.g. CMC's one per colour split) is exported
one torchvision file per encoder, `encoder_path(out, name)` (`enc.pth` → `enc.<name>.pth`), and says
so; such a model has no Detectron2 export (each encoder reads its own input channels).

Files are written to a temporary name in the same folder and renamed: never half-written.
"""

from __future__ import annotations

import os
import pickle
import sys

import numpy as np

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


def detectron2_checkpoint(encoder) -> dict:
    """The Detectron2 pickle's content for an `Encoder` (ImageNet-stem, 3-channel ResNets only)."""
    if len(encoder_names(encoder)) != 1:
        raise ExportError(
            f"the model has {len(encoder_names(encoder))} encoders {list(encoder_names(encoder))}, "
            "each on its own input channels; Detectron2 feeds one 3-channel ResNet. "
            "Export --format=torchvision (one file per encoder) instead."
        )
    model = encoder.config.model
    if model.stem != "imagenet":
        raise ExportError(
            "Detectron2's ResNet has the ImageNet stem (7x7/2 conv + max-pool); "
            f"this run uses config.model.stem={model.stem!r}, which Detectron2 cannot load. "
            "Export --format=torchvision instead."
        )
    if int(encoder.config.data.channels) != 3:
        raise ExportError(
            "Detectron2 feeds 3-channel images; this run was trained on "
            f"config.data.channels={encoder.config.data.channels}. Export --format=torchvision."
        )
    sd = torchvision_state_dict(encoder)
    weights = {
        detectron2_name(k): np.asarray(v, np.float32)
        for k, v in sd.items()
        if not k.endswith("num_batches_tracked")
    }
    return {"model": weights, "__author__": "ssl_jax", "matching_heuristics": True}


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
    names = encoder_names(encoder)
    if fmt == "torchvision" and len(names) > 1:
        return _export_each_encoder(encoder, out, names, probe_head, torch)
    if fmt == "torchvision":
        sd = torchvision_state_dict(encoder, probe_head)
        tensors = {k: torch.from_numpy(np.array(v, copy=True)) for k, v in sd.items()}
        _atomic_write(out, lambda tmp: torch.save(tensors, tmp))
        print(f"wrote {len(sd)} tensors (torchvision names) of step {encoder.step} to {out}")
    else:
        ckpt = detectron2_checkpoint(encoder)

        def write(tmp):
            with open(tmp, "wb") as f:
                pickle.dump(ckpt, f)

        _atomic_write(out, write)
        mean = [round(255 * m, 3) for m in encoder.config.data.mean]
        std = [round(255 * s, 3) for s in encoder.config.data.std]
        print(
            f"wrote {len(ckpt['model'])} arrays (Detectron2 names) of step {encoder.step} "
            f"to {out}\nfine-tune with MODEL.WEIGHTS {out} INPUT.FORMAT RGB "
            f"MODEL.RESNETS.STRIDE_IN_1X1 False MODEL.PIXEL_MEAN {mean} MODEL.PIXEL_STD {std} "
            "(configs/detectron2/*.yaml)"
        )
    return out


def encoder_path(out: str, name: str) -> str:
    """`encoder.pth` → `encoder.<name>.pth`: where the export writes each encoder of a model."""
    root, ext = os.path.splitext(out)
    return f"{root}.{name}{ext}"


def _export_each_encoder(encoder, out: str, names, probe_head, torch) -> list[str]:
    """A model of several encoders: one torchvision state_dict per encoder, said on stdout."""
    if probe_head is not None:
        torchvision_state_dict(encoder, probe_head)  # raises: one head, several encoders
    paths = []
    for name in names:
        sd = torchvision_state_dict(encoder, name=name)
        tensors = {k: torch.from_numpy(np.array(v, copy=True)) for k, v in sd.items()}
        path = encoder_path(out, name)
        _atomic_write(path, lambda tmp, t=tensors: torch.save(t, tmp))
        paths.append(path)
    print(
        f"this run's model has {len(names)} encoders ({', '.join(names)}); wrote each "
        f"(torchvision names, step {encoder.step}): {', '.join(paths)}"
    )
    return paths


def main(argv) -> None:
    del argv
    from absl import flags

    from ssl_jax.checkpoint import CheckpointError

    f = flags.FLAGS
    try:
        export(f.workdir, f.format, f.out, head=f.head, weights=f.weights)
    except (CheckpointError, ExportError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from absl import app, flags

    flags.DEFINE_string("workdir", None, "Pretraining workdir or checkpoint folder.")
    flags.DEFINE_enum("format", "torchvision", list(FORMATS), "Output format.")
    flags.DEFINE_string("out", None, "Output file (.pth for torchvision, .pkl for detectron2).")
    flags.DEFINE_string(
        "head", None, "torchvision only: linear-probe workdir whose head becomes fc."
    )
    flags.DEFINE_enum("weights", "online", ["online", "target"], "Online or target (EMA) weights.")
    flags.mark_flags_as_required(["workdir", "out"])
    app.run(main)
