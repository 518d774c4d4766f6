"""A fake PyContrast `main_contrast.py` (the harness's tests): `main` spawns `main_worker` on
each GPU, which builds the trainer's DDP environment, the model pair, the loader, the memory,
criterion and SGD, wraps them up and runs the epochs. Not the official code."""

import torch
import torch.multiprocessing as mp
import torch.nn as nn
from datasets.util import build_contrast_loader
from learning.contrast_trainer import ContrastTrainer
from memory.build_memory import build_mem
from networks.build_backbone import build_model
from options.train_options import TrainOptions


def main():
    args = TrainOptions().parse()
    args.distributed = args.world_size > 1 or args.multiprocessing_distributed
    gpus = torch.cuda.device_count()
    if not args.multiprocessing_distributed:
        raise NotImplementedError("DDP only")
    args.world_size = gpus * args.world_size
    mp.spawn(main_worker, nprocs=gpus, args=(gpus, args))


def main_worker(gpu, ngpus_per_node, args):
    trainer = ContrastTrainer(args)
    trainer.init_ddp_environment(gpu, ngpus_per_node)
    model, model_ema = build_model(args)
    dataset, loader, sampler = build_contrast_loader(args, ngpus_per_node)
    contrast = build_mem(args, len(dataset))
    contrast.cuda()
    criterion = nn.CrossEntropyLoss().cuda()
    optimizer = torch.optim.SGD(
        model.parameters(),
        lr=args.learning_rate,
        momentum=args.momentum,
        weight_decay=args.weight_decay,
    )
    model, model_ema, optimizer = trainer.wrap_up(model, model_ema, optimizer)
    trainer.broadcast_memory(contrast)
    first = trainer.resume_model(model, model_ema, contrast, optimizer)
    trainer.init_tensorboard_logger()
    for epoch in range(first, args.epochs + 1):
        sampler.set_epoch(epoch)
        trainer.adjust_learning_rate(optimizer, epoch)
        outs = trainer.train(epoch, loader, model, model_ema, contrast, criterion, optimizer)
        trainer.logging(epoch, outs, optimizer.param_groups[0]["lr"])
        trainer.save(model, model_ema, contrast, optimizer, epoch)
