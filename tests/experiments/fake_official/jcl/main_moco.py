"""A fake JCL `main_moco.py` (the harness's tests): `train`, `adjust_learning_rate` and `accuracy`
with the official signatures; `train` binds the views only when `args.gpu` is set, ramps λ per
epoch, adds `jcl_loss` to the criterion's loss and logs through the module's `logger`, as the
official one does. Not the official code."""

import math

import torch
from moco import *  # noqa: F403

logger = None


def train(train_loader, model, criterion, optimizer, epoch, args):
    model.train()
    for i, (images, _) in enumerate(train_loader):
        if args.gpu is not None:
            images = [m.cuda(args.gpu, non_blocking=True) for m in images]
            images[1] = torch.cat(images[1:], dim=0)
            im_q, im_k = images[0], images[1]
        if args.jcl:
            ratio = args.jcl_lambda * ((epoch + 1) * 1.0 / args.epochs)
            output, target, jcl_loss = model(im_q=im_q, im_k=im_k, ratio=ratio)
            loss = criterion(output, target) + jcl_loss
        else:
            output, target = model(im_q=im_q, im_k=im_k)
            loss = criterion(output, target)
        accuracy(output, target, topk=(1, 5))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i % args.print_freq == 0:
            logger.info(f"Epoch: [{epoch}][{i}] loss {loss.item():.4f}")


def adjust_learning_rate(optimizer, epoch, args):
    lr = args.lr * 0.5 * (1.0 + math.cos(math.pi * epoch / args.epochs))
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr


def accuracy(output, target, topk=(1,)):
    _, pred = output.topk(max(topk), 1, True, True)
    correct = pred.t().eq(target.view(1, -1).expand_as(pred.t()))
    return [correct[:k].view(-1).float().sum(0, keepdim=True) for k in topk]
