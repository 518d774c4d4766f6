"""A fake `src/utils/callbacks.py` (the harness's tests): the lr callback Lightning calls at each
epoch's start. Not the official code."""

import math

from pytorch_lightning import Callback


class MoCoLRScheduler(Callback):
    history = []  # (epoch, lr) of each call: what the tests read

    def __init__(
        self, initial_lr=0.03, use_cosine_scheduler=False, schedule=(120, 160), max_epochs=200
    ):
        self.lr, self.cosine, self.schedule, self.max_epochs = (
            initial_lr,
            use_cosine_scheduler,
            schedule,
            max_epochs,
        )

    def on_epoch_start(self, trainer, _):
        lr = self.lr * 0.5 * (1.0 + math.cos(math.pi * trainer.current_epoch / self.max_epochs))
        if not self.cosine:
            lr = self.lr * 0.1 ** sum(trainer.current_epoch >= m for m in self.schedule)
        self.history.append((trainer.current_epoch, round(lr, 6)))
        for group in trainer.optimizers[0].param_groups:
            group["lr"] = lr
