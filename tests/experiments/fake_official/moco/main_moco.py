"""A fake `main_moco.py` (the harness's tests): `train`, `adjust_learning_rate` and `accuracy`
with the official signatures; `train` calls `accuracy` with `.view` as the official one does."""

import math


def train(train_loader, model, criterion, optimizer, epoch, args):
    model.train()
    for images, _ in train_loader:
        output, target = model(im_q=images[0], im_k=images[1])
        loss = criterion(output, target)
        accuracy(output, target, topk=(1, 5))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def adjust_learning_rate(optimizer, epoch, args):
    lr = args.lr * 0.5 * (1.0 + math.cos(math.pi * epoch / args.epochs))
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr


def accuracy(output, target, topk=(1,)):
    _, pred = output.topk(max(topk), 1, True, True)
    correct = pred.t().eq(target.view(1, -1).expand_as(pred.t()))
    return [correct[:k].view(-1).float().sum(0, keepdim=True) for k in topk]
