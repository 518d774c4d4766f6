"""Fake `DistOptimizerHook`: zero_grad before the run; backward, step, zero_grad each iteration."""

from mmcv.runner import HOOKS, OptimizerHook

INSTANCES = []  # each hook made (the test reads the last)


@HOOKS.register_module()
class DistOptimizerHook(OptimizerHook):
    def __init__(self, update_interval=1, grad_clip=None):
        self.steps = 0
        INSTANCES.append(self)

    def before_run(self, runner):
        runner.optimizer.zero_grad()

    def after_train_iter(self, runner):
        runner.outputs["loss"].backward()
        runner.optimizer.step()
        runner.optimizer.zero_grad()
        self.steps += 1
