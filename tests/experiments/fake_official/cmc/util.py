"""A fake `util.py`: the step decay by epoch (1-based, after each of `lr_decay_epochs`). Not the
official code."""

import numpy as np


def adjust_learning_rate(epoch, opt, optimizer):
    steps = np.sum(epoch > np.asarray(opt.lr_decay_epochs))
    if steps > 0:
        for group in optimizer.param_groups:
            group["lr"] = opt.learning_rate * (opt.lr_decay_rate**steps)
