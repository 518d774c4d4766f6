"""A fake PyContrast `learning/base_trainer.py` (the harness's tests): the DDP environment
(`torch.cuda.set_device`, the process group, a local group), the TensorBoard logger and the
per-epoch cosine lr. Not the official code."""

import math
import os

import tensorboard_logger as tb_logger
import torch
import torch.backends.cudnn as cudnn
import torch.distributed as dist


class BaseTrainer:
    def __init__(self, args):
        self.args, self.local_group, self.logger, self.lrs = args, None, None, []

    def init_ddp_environment(self, gpu, ngpus_per_node):
        a = self.args
        a.gpu, a.ngpus_per_node, a.node_rank, a.local_rank = gpu, ngpus_per_node, a.rank, gpu
        torch.cuda.set_device(gpu)
        cudnn.benchmark = True
        a.rank = a.rank * ngpus_per_node + gpu
        os.environ["PYTHONWARNINGS"] = "ignore"
        dist.init_process_group(
            backend=a.dist_backend, init_method=a.dist_url, world_size=a.world_size, rank=a.rank
        )
        self.local_group = torch.distributed.new_group(ranks=[0], backend=a.dist_backend)

    def init_tensorboard_logger(self):
        self.logger = tb_logger.Logger(logdir=self.args.tb_folder, flush_secs=2)

    def adjust_learning_rate(self, optimizer, epoch):
        a = self.args
        low = a.learning_rate * a.lr_decay_rate**3
        lr = low + (a.learning_rate - low) * (1 + math.cos(math.pi * epoch / a.epochs)) / 2
        self.lrs.append(lr)
        for group in optimizer.param_groups:
            group["lr"] = lr

    def warmup_learning_rate(self, epoch, batch_id, total_batches, optimizer):
        if self.args.warm:
            raise AssertionError("no warm-up at batch <= 256")
