"""A fake `scripts/run.py` (the harness's tests): `seed_everything`, and the Lightning import the
harness stands in for. Not the official code."""

import random

import pytorch_lightning  # noqa: F401
import torch


def seed_everything(seed, use_cuda=True):
    random.seed(seed)
    torch.manual_seed(seed)
