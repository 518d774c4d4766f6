"""Fake `mmselfsup/models/builder.py`: one registry under mmcv's, the build functions."""

from mmcv.cnn import MODELS as MMCV_MODELS
from mmcv.utils import Registry

MODELS = Registry("models", parent=MMCV_MODELS)
ALGORITHMS = BACKBONES = NECKS = HEADS = MEMORIES = MODELS


def build_algorithm(cfg):
    return ALGORITHMS.build(cfg)


def build_backbone(cfg):
    return BACKBONES.build(cfg)


def build_neck(cfg):
    return NECKS.build(cfg)


def build_head(cfg):
    return HEADS.build(cfg)


def build_memory(cfg):
    return MEMORIES.build(cfg)
