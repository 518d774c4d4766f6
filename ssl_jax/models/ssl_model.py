"""`SSLModel` and `TwoEncoderModel`, their heads and the checks of `config.model` (the schema is in
`ssl_jax.models`' docstring, the package's face)."""

from collections.abc import Mapping, Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import ml_collections

from ssl_jax.config_checks import ConfigError
from ssl_jax.models import resnet as _resnet
from ssl_jax.models.alexnet import AlexNet
from ssl_jax.models.conv import CONV_IMPLS
from ssl_jax.models.heads import JigsawHead, MLPHead
from ssl_jax.models.resnet import ResNet

BACKBONES = {"resnet18": 18, "resnet34": 34, "resnet50": 50}
ALEXNETS = ("alexnet",)  # CMC's AlexNet (`alexnet.py`), built by `backbone_only` too
STEMS = _resnet.STEMS  # AlexNet checks its own
DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}
DTYPE_CHOICES = (*DTYPES, "auto")  # the allowed values of config.model.dtype
ACCELERATORS = ("gpu", "cuda", "rocm", "tpu")  # backends on which 'auto' means bfloat16


def resolve_dtype(name: Any) -> str:
    """`config.model.dtype` → 'float32' | 'bfloat16': 'auto' is 'bfloat16' when
    `jax.default_backend()` is a GPU or TPU and 'float32' on CPU (XLA:CPU's bf16 convs are slow)."""
    if name == "auto":
        return "bfloat16" if jax.default_backend() in ACCELERATORS else "float32"
    if name not in DTYPES:
        raise ValueError(f"model.dtype must be one of {list(DTYPE_CHOICES)}, got {name!r}")
    return name


def compute_dtype(name: Any) -> Any:
    """The jnp compute dtype of `config.model.dtype` (params, BN statistics and losses stay float32)."""
    return DTYPES[resolve_dtype(name)]


_MODEL_KEYS = (
    "backbone",
    "stem",
    "width",
    "dtype",
    "zero_init_residual",
    "conv_impl",
    "stem_width",
    "projector",
    "predictor",
)
_HEAD_KEYS = ("hidden_dims", "out_dim", "hidden_bias", "last_bias", "last_bn", "use_bn")
_HEAD_BOOLS = ("hidden_bias", "last_bias", "last_bn", "use_bn")


class _EngineCall(nn.Module):
    """The engine's call of every model, written once: `__call__(x, train, bn_groups=1,
    use_predictor=True, head_bn_groups=None)` resolves the heads' BN groups and runs the subclass's
    `_forward(x, train, bn_groups, head_groups, use_predictor)`."""

    def __call__(
        self,
        x: jnp.ndarray,
        train: bool,
        bn_groups: int = 1,
        use_predictor: bool = True,
        head_bn_groups: int | None = None,
    ) -> dict[str, jnp.ndarray]:
        """`bn_groups`: BN statistics groups of the backbone(s); `head_bn_groups` of the heads
        (None: the same as the backbone; 1 with SCE's SplitBN, which splits BN2d only)."""
        head_groups = bn_groups if head_bn_groups is None else head_bn_groups
        return self._forward(x, train, bn_groups, head_groups, use_predictor)


class SSLModel(_EngineCall):
    """backbone → projector [→ predictor].

    `__call__(x, train, bn_groups=1, use_predictor=True, head_bn_groups=None)` returns a dict of
    float32 arrays:
    `features` `[N, D_backbone]`, `projection` `[N, d]` and, when a predictor exists and
    `use_predictor`, `prediction` `[N, d']`. No L2 normalisation here (the methods do it).
    `model.apply(variables, x, train=False, method=SSLModel.features)` runs the backbone only.

    The model protocol every method's model follows (evaluation and export rely on nothing else):
    `features(x)` `[N, feature_dim]`, `feature_dim`, and `ENCODERS`, the names of its ResNet
    sub-modules (one here; a two-encoder model such as CMC's names both, and the export writes each).
    """

    backbone: ResNet
    projector: MLPHead
    predictor: MLPHead | None = None
    jigsaw: JigsawHead | None = None  # InfoMin's jigsaw branch (`jigsaw_projection`)

    ENCODERS = ("backbone",)

    @property
    def feature_dim(self) -> int:
        return self.backbone.feature_dim

    def _forward(self, x, train, bn_groups, head_groups, use_predictor) -> dict[str, jnp.ndarray]:
        features = self.backbone(x, train, bn_groups)
        projection = self.projector(features, train, head_groups)
        out = {"features": features, "projection": projection}
        if self.predictor is not None and use_predictor:
            out["prediction"] = self.predictor(projection, train, head_groups)
        if self.jigsaw is not None and self.is_initializing():  # create its parameters
            k = self.jigsaw.num_patches
            order = jnp.arange(k)[None]
            self.jigsaw(jnp.zeros((k, features.shape[-1]), features.dtype), order, train)
        return out

    def features(
        self, x: jnp.ndarray, train: bool = False, bn_groups: int = 1, stages: bool = False
    ) -> jnp.ndarray:
        """Backbone features `[N, D_backbone]` float32 only (kNN, linear probe, export); with
        `stages` every stage's pooled output, concatenated (`ResNet.__call__`)."""
        return self.backbone(x, train, bn_groups, stages)

    def jigsaw_projection(
        self, patches: jnp.ndarray, order: jnp.ndarray, train: bool, bn_groups: int = 1
    ) -> jnp.ndarray:
        """InfoMin's jigsaw branch: the backbone on `patches` `[N·k, h, w, C]` (image-major; its own
        forward, so its own BN batch statistics, as PyContrast's second `self.encoder` call), then
        `JigsawHead` with `order` `[N, k]` → `[N, d]` float32, not normalised."""
        return self.jigsaw(self.backbone(patches, train, bn_groups), order, train, bn_groups)


class TwoEncoderModel(_EngineCall):
    """CMC's model: one ResNet and one head per channel split of a colour-space image.

    The input is the whole converted image `[N, H, W, 3]` (Lab / YCbCr / YDbDr, normalised: the
    recipe's `color_space` op); `encoder1` reads channels `[:split]` (L or Y, 1 channel) and
    `encoder2` channels `[split:]` (ab, CbCr or DbDr, 2 channels), as CMC's `MyResNetsCMC`
    (`l_to_ab`, `ab_to_l`) and PyContrast's `CMCMultiHeads` split the tensor.

    `__call__(x, train, bn_groups=1, use_predictor=True, head_bn_groups=None)` →
    `{'features': [N, D1 + D2], 'projection1': [N, d], 'projection2': [N, d]}` (float32, not
    normalised; the methods normalise). `features(x)` = the concatenation of both encoders' pooled
    features, what CMC's linear evaluation reads; `ENCODERS` names both ResNets (the export writes
    one torchvision file each). `use_predictor` is accepted for the engine's signature (no predictor).
    """

    encoder1: ResNet
    encoder2: ResNet
    head1: MLPHead
    head2: MLPHead
    split: int = 1

    ENCODERS = ("encoder1", "encoder2")

    @property
    def feature_dim(self) -> int:
        return self.encoder1.feature_dim + self.encoder2.feature_dim

    def _encode(self, x, train, bn_groups, stages=False):
        return (
            self.encoder1(x[..., : self.split], train, bn_groups, stages),
            self.encoder2(x[..., self.split :], train, bn_groups, stages),
        )

    def _forward(self, x, train, bn_groups, head_groups, use_predictor) -> dict[str, jnp.ndarray]:
        del use_predictor
        f1, f2 = self._encode(x, train, bn_groups)
        return {
            "features": jnp.concatenate([f1, f2], axis=-1),
            "projection1": self.head1(f1, train, head_groups),
            "projection2": self.head2(f2, train, head_groups),
        }

    def features(
        self, x: jnp.ndarray, train: bool = False, bn_groups: int = 1, stages: bool = False
    ) -> jnp.ndarray:
        """`[N, D1 + D2]`: both encoders' pooled features (with `stages`, each encoder's stage
        features), concatenated (view 1 first)."""
        return jnp.concatenate(self._encode(x, train, bn_groups, stages), axis=-1)


def head_config(
    hidden_dims: Sequence[int],
    out_dim: int,
    *,
    hidden_bias: bool = True,
    last_bias: bool = True,
    last_bn: bool = False,
    use_bn: bool = True,
    enabled: bool | None = None,
) -> ml_collections.ConfigDict:
    """A head ConfigDict for `config.model.projector` / `.predictor` (`enabled`: predictor only)."""
    cfg = ml_collections.ConfigDict(
        {
            "hidden_dims": tuple(int(d) for d in hidden_dims),
            "out_dim": int(out_dim),
            "hidden_bias": hidden_bias,
            "last_bias": last_bias,
            "last_bn": last_bn,
            "use_bn": use_bn,
        }
    )
    if enabled is not None:
        cfg.enabled = enabled
    return cfg


def _check_keys(cfg: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    unknown = sorted(set(cfg.keys()) - set(allowed))
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} in {where}; allowed keys: {list(allowed)}")


def _as_dict(cfg: Any, where: str) -> dict[str, Any]:
    if isinstance(cfg, ml_collections.ConfigDict):
        return cfg.to_dict()
    if isinstance(cfg, Mapping):
        return dict(cfg)
    raise ValueError(f"{where} must be a ConfigDict or mapping, got {type(cfg).__name__}")


def _dtype(name: Any, where: str) -> Any:
    if name not in DTYPE_CHOICES:
        raise ValueError(f"{where} must be one of {list(DTYPE_CHOICES)}, got {name!r}")
    return compute_dtype(name)


def build_head(
    head_cfg: Any, *, dtype: Any = jnp.float32, where: str = "model.projector"
) -> MLPHead:
    """MLPHead from a head config (see module docstring); `where` names it in error messages."""
    cfg = _as_dict(head_cfg, where)
    cfg.pop("enabled", None)
    _check_keys(cfg, _HEAD_KEYS, where)
    for key in ("hidden_dims", "out_dim"):
        if key not in cfg:
            raise ValueError(f"{where}.{key} is required")
    hidden = cfg["hidden_dims"]
    if isinstance(hidden, int) or not all(isinstance(d, int) and d > 0 for d in hidden):
        raise ValueError(f"{where}.hidden_dims must be a tuple of positive ints, got {hidden!r}")
    out_dim = cfg["out_dim"]
    if not isinstance(out_dim, int) or out_dim <= 0:
        raise ValueError(f"{where}.out_dim must be a positive int, got {out_dim!r}")
    flags = {}
    for key in _HEAD_BOOLS:
        if key in cfg:
            if not isinstance(cfg[key], bool):
                raise ValueError(f"{where}.{key} must be True or False, got {cfg[key]!r}")
            flags[key] = cfg[key]
    return MLPHead(hidden_dims=tuple(hidden), out_dim=out_dim, dtype=dtype, **flags)


def backbone_only(model_config: Any) -> ResNet | AlexNet:
    """The ResNet (or CMC's AlexNet) of `config.model` (heads not built or validated)."""
    cfg = _as_dict(model_config, "model")
    name = cfg.get("backbone")
    if name not in (*BACKBONES, *ALEXNETS):
        raise ValueError(f"model.backbone must be one of {[*BACKBONES, *ALEXNETS]}, got {name!r}")
    stem = cfg.get("stem", "imagenet")
    if stem not in STEMS:
        raise ValueError(f"model.stem must be one of {list(STEMS)}, got {stem!r}")
    width = cfg.get("width", 1.0)
    if isinstance(width, bool) or not isinstance(width, int | float) or width <= 0:
        raise ValueError(f"model.width must be a number > 0, got {width!r}")
    zero_init = cfg.get("zero_init_residual", False)
    if not isinstance(zero_init, bool):
        raise ValueError(f"model.zero_init_residual must be True or False, got {zero_init!r}")
    conv_impl = cfg.get("conv_impl", "auto")
    if conv_impl not in CONV_IMPLS:
        raise ValueError(f"model.conv_impl must be one of {list(CONV_IMPLS)}, got {conv_impl!r}")
    stem_width = cfg.get("stem_width", 0)
    if isinstance(stem_width, bool) or not isinstance(stem_width, int) or stem_width < 0:
        raise ValueError(f"model.stem_width must be an int >= 0, got {stem_width!r}")
    if name in ALEXNETS:
        if zero_init or stem_width:
            raise ValueError("model.zero_init_residual and model.stem_width are ResNet options")
        dtype = _dtype(cfg.get("dtype", "float32"), "model.dtype")
        return AlexNet(stem=stem, width=float(width), dtype=dtype, conv_impl=conv_impl)
    return ResNet(
        depth=BACKBONES[name],
        stem=stem,
        width=float(width),
        dtype=_dtype(cfg.get("dtype", "float32"), "model.dtype"),
        zero_init_residual=zero_init,
        conv_impl=conv_impl,
        stem_width=stem_width,
    )


def build_model(model_config: Any, *, jigsaw_patches: int = 0) -> SSLModel:
    """SSLModel from `config.model` (schema in the module docstring); ValueError on bad config.
    `jigsaw_patches` > 0 adds InfoMin's `JigsawHead` over that many patches, its per-patch head
    of the projector's shape."""
    cfg = _as_dict(model_config, "model")
    _check_keys(cfg, _MODEL_KEYS, "model")
    backbone = backbone_only(cfg)
    dtype = backbone.dtype
    if cfg.get("projector") is None:
        raise ValueError("model.projector is required (a head config: hidden_dims, out_dim, ...)")
    projector = build_head(cfg["projector"], dtype=dtype, where="model.projector")
    predictor = None
    pred_cfg = cfg.get("predictor")
    if pred_cfg is not None:
        pred_cfg = _as_dict(pred_cfg, "model.predictor")
        enabled = pred_cfg.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ValueError(f"model.predictor.enabled must be True or False, got {enabled!r}")
        if enabled:
            predictor = build_head(pred_cfg, dtype=dtype, where="model.predictor")
        else:
            _check_keys(pred_cfg, (*_HEAD_KEYS, "enabled"), "model.predictor")
    jigsaw = None
    if jigsaw_patches:
        patch_head = build_head(cfg["projector"], dtype=dtype, where="model.projector")
        jigsaw = JigsawHead(patch_head=patch_head, num_patches=jigsaw_patches, dtype=dtype)
    return SSLModel(backbone=backbone, projector=projector, predictor=predictor, jigsaw=jigsaw)


def build_two_encoder_model(
    model_config: Any, *, width_factor: float = 0.5, split: int = 1
) -> TwoEncoderModel:
    """`TwoEncoderModel` from `config.model`: two ResNets of `config.model.backbone` at
    `width_factor · model.width` each (CMC's `resnet50v1` = ResNet-50 at width 1 split in two halves
    of width 0.5; v2 = width 2, v3 = width 4) and two heads `model.projector` (a predictor is
    refused). `split`: channels of view 1 (1: L | ab, Y | CbCr, Y | DbDr)."""
    cfg = _as_dict(model_config, "model")
    _check_keys(cfg, _MODEL_KEYS, "model")
    pred = cfg.get("predictor")
    if pred is not None and _as_dict(pred, "model.predictor").get("enabled", True):
        raise ValueError("model.predictor: a two-encoder model has no predictor; set it to None")
    if cfg.get("projector") is None:
        raise ValueError("model.projector is required (a head config: hidden_dims, out_dim, ...)")
    half = dict(cfg, width=float(cfg.get("width", 1.0)) * width_factor)
    encoder1, encoder2 = backbone_only(half), backbone_only(half)
    dtype = encoder1.dtype
    head = lambda: build_head(cfg["projector"], dtype=dtype, where="model.projector")
    return TwoEncoderModel(
        encoder1=encoder1, encoder2=encoder2, head1=head(), head2=head(), split=split
    )


def _model_error(where: str, key: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"config.{where}.{key}={value!r} is not allowed; allowed: {allowed}")


def _check_head(cfg: Any, where: str) -> None:
    if not isinstance(cfg, Mapping | ml_collections.ConfigDict):
        raise ConfigError(f"config.{where} must be a head config (hidden_dims, out_dim, ...)")
    cfg = _as_dict(cfg, where)
    enabled = cfg.pop("enabled", True)
    if not isinstance(enabled, bool):
        raise _model_error(where, "enabled", enabled, "True or False")
    unknown = sorted(set(cfg) - set(_HEAD_KEYS))
    if unknown:
        raise ConfigError(
            f"config.{where} has unknown key(s) {unknown}; allowed keys: {_HEAD_KEYS}"
        )
    if not enabled:
        return
    for key in ("hidden_dims", "out_dim"):
        if key not in cfg:
            raise ConfigError(f"config.{where}.{key} is required")
    hidden = cfg["hidden_dims"]
    if not isinstance(hidden, tuple | list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in hidden
    ):
        raise _model_error(where, "hidden_dims", hidden, "a tuple of positive ints, e.g. (2048,)")
    out_dim = cfg["out_dim"]
    if not isinstance(out_dim, int) or isinstance(out_dim, bool) or out_dim < 1:
        raise _model_error(where, "out_dim", out_dim, "an int >= 1")
    for key in _HEAD_BOOLS:
        if key in cfg and not isinstance(cfg[key], bool):
            raise _model_error(where, key, cfg[key], "True or False")


def check_config(model_config: Any, where: str = "model") -> None:
    """Check `config.model` (schema in the module docstring) without building anything.

    Raises `ssl_jax.configs.ConfigError` naming `config.model.<key>=<value>` and the allowed
    values, which come from the builders' own tables: the backbones whose depth `resnet.STAGES`
    builds, `resnet.STEMS`, `DTYPE_CHOICES` and `conv.CONV_IMPLS` (those `ResNet` checks too).
    """
    cfg = _as_dict(model_config, where)
    unknown = sorted(set(cfg) - set(_MODEL_KEYS))
    if unknown:
        raise ConfigError(
            f"config.{where} has unknown key(s) {unknown}; allowed keys: {list(_MODEL_KEYS)}"
        )
    choices = {
        "backbone": (
            cfg.get("backbone"),
            [*(n for n, d in BACKBONES.items() if d in _resnet.STAGES), *ALEXNETS],
        ),
        "stem": (cfg.get("stem", "imagenet"), list(_resnet.STEMS)),
        "dtype": (cfg.get("dtype", "float32"), list(DTYPE_CHOICES)),
        "conv_impl": (cfg.get("conv_impl", "auto"), list(CONV_IMPLS)),
    }
    for key, (value, allowed) in choices.items():
        if not isinstance(value, str) or value not in allowed:
            raise ConfigError(
                f"config.{where}.{key}={value!r} is not allowed; allowed values: {allowed}"
            )
    width = cfg.get("width", 1.0)
    if isinstance(width, bool) or not isinstance(width, int | float) or not width > 0:
        raise _model_error(where, "width", width, "a number > 0")
    zero_init = cfg.get("zero_init_residual", False)
    if not isinstance(zero_init, bool):
        raise _model_error(where, "zero_init_residual", zero_init, "True or False")
    stem_width = cfg.get("stem_width", 0)
    if isinstance(stem_width, bool) or not isinstance(stem_width, int) or stem_width < 0:
        raise _model_error(where, "stem_width", stem_width, "an int >= 0 (0 = round(64 * width))")
    if cfg["backbone"] in ALEXNETS:
        for key, default in (("zero_init_residual", False), ("stem_width", 0)):
            if cfg.get(key, default) != default:
                raise _model_error(where, key, cfg[key], f"{default} (a ResNet option)")
    if cfg.get("projector") is None:
        raise ConfigError(
            f"config.{where}.projector is required (a head config: hidden_dims, out_dim, ...)"
        )
    _check_head(cfg["projector"], f"{where}.projector")
    if cfg.get("predictor") is not None:
        _check_head(cfg["predictor"], f"{where}.predictor")
