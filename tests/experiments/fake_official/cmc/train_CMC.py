"""A fake `train_CMC.py` (the harness's tests): Python-2-era `async=True` in `train` (a syntax
error since 3.7, which the harness edits), `get_train_loader` building `ImageFolderInstance` through
`RandomResizedCrop(224)`, flip, `RGB2Lab`, `Normalize`; `set_model`, `set_optimizer` and `train`
with the official signatures, calling the criteria L first then ab. Not the official code."""

import os

import tensorboard_logger as tb_logger  # noqa: F401
import torch
from dataset import ImageFolderInstance, RGB2Lab
from models.resnet import MyResNetsCMC
from NCE.NCEAverage import NCEAverage
from NCE.NCECriterion import NCECriterion, NCESoftmaxLoss
from torchvision import transforms
from util import adjust_learning_rate  # noqa: F401

LRS = []  # (epoch, lr) of every step: what the tests read


def get_train_loader(args):
    normalize = transforms.Normalize(mean=[50.0, 6.0, -6.7], std=[50.0, 92.2, 101.2])
    train_transform = transforms.Compose(
        [
            transforms.RandomResizedCrop(224, scale=(args.crop_low, 1.0)),
            transforms.RandomHorizontalFlip(),
            RGB2Lab(),
            transforms.ToTensor(),
            normalize,
        ]
    )
    train_dataset = ImageFolderInstance(os.path.join(args.data_folder, "train"), transform=train_transform)
    loader = torch.utils.data.DataLoader(
        train_dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers
    )
    return loader, len(train_dataset)


def set_model(args, n_data):
    model = MyResNetsCMC(args.model)
    contrast = NCEAverage(args.feat_dim, n_data, args.nce_k, args.nce_t, args.nce_m, args.softmax)
    criterion_l = NCESoftmaxLoss() if args.softmax else NCECriterion(n_data)
    criterion_ab = NCESoftmaxLoss() if args.softmax else NCECriterion(n_data)
    return model, contrast, criterion_ab, criterion_l


def set_optimizer(args, model):
    return torch.optim.SGD(
        model.parameters(), lr=args.learning_rate, momentum=args.momentum, weight_decay=args.weight_decay
    )


def train(epoch, train_loader, model, contrast, criterion_l, criterion_ab, optimizer, opt):
    model.train()
    for idx, (inputs, _, index) in enumerate(train_loader):
        inputs = inputs.float()
        if torch.cuda.is_available():
            index = index.cuda(async=True)
        feat_l, feat_ab = model(inputs)
        out_l, out_ab = contrast(feat_l, feat_ab, index)
        loss = criterion_l(out_l) + criterion_ab(out_ab)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        LRS.append((epoch, optimizer.param_groups[0]["lr"]))
        torch.cuda.synchronize()
