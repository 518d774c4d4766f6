"""A fake `ressl.py` (the harness's tests): parses its command line at import, imports the data
module (memcached), `warm_up`, the per-iteration `adjust_learning_rate` and `train` with the
official signatures and loss. Not the official code."""

import argparse
import math

import torch
import torch.nn.functional as F
from data.imagenet import *  # noqa: F403
from network.ressl import ReSSL  # noqa: F401
from util.meter import *  # noqa: F403

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=200)
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--t", type=float, default=0.04)
parser.add_argument("--backbone", type=str, default="resnet50")
args = parser.parse_args()

epochs = args.epochs
warm_up = 5
lrs = []


def adjust_learning_rate(optimizer, epoch, base_lr, i, iteration_per_epoch):
    T = epoch * iteration_per_epoch + i
    warmup_iters = warm_up * iteration_per_epoch
    total_iters = (epochs - warm_up) * iteration_per_epoch
    if epoch < warm_up:
        lr = base_lr * 1.0 * T / warmup_iters
    else:
        lr = 0.5 * base_lr * (1 + math.cos(1.0 * (T - warmup_iters) / total_iters * math.pi))
    lrs.append(lr)
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr


def train(train_loader, model, local_rank, rank, criterion, optimizer, base_lr, epoch):
    losses = AverageMeter("Loss", ":.4e")  # noqa: F405
    model.train()
    iteration_per_epoch = len(train_loader)
    for i, (img1, img2) in enumerate(train_loader):
        adjust_learning_rate(optimizer, epoch, base_lr, i, iteration_per_epoch)
        if local_rank is not None:
            img1 = img1.cuda(local_rank, non_blocking=True)
            img2 = img2.cuda(local_rank, non_blocking=True)
        logitsq, logitsk = model(im_q=img1, im_k=img2)
        loss = -torch.sum(
            F.softmax(logitsk.detach() / args.t, dim=1) * F.log_softmax(logitsq / 0.1, dim=1),
            dim=1,
        ).mean()
        losses.update(loss.item(), img1.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
