"""Fake `BaseModel`: forward by mode, `train_step` → losses summed, all-reduced as logged."""

from collections import OrderedDict

import torch.distributed as dist
from mmcv.runner import BaseModule, auto_fp16


class BaseModel(BaseModule):
    @auto_fp16(apply_to=("img",))
    def forward(self, img, mode="train", **kwargs):
        if mode == "train":
            return self.forward_train(img, **kwargs)
        if mode == "extract":
            return self.extract_feat(img)
        raise Exception(f"No such mode: {mode}")

    def train_step(self, data, optimizer):
        losses = self(**data)
        log_vars = OrderedDict((k, v.mean()) for k, v in losses.items())
        loss = sum(v for k, v in log_vars.items() if "loss" in k)
        log_vars["loss"] = loss
        for name, value in log_vars.items():
            value = value.data.clone()
            dist.all_reduce(value.div_(dist.get_world_size()))
            log_vars[name] = value.item()
        return dict(loss=loss, log_vars=log_vars, num_samples=len(data["img"][0]))
