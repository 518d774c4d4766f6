"""A fake `src/utils/policy.py` (the harness's tests): a constant and a linear outer threshold.
Not the official code."""


class ConstantThresholdPolicy:
    def __init__(self, init_thres=1.0):
        self.init_thres = init_thres

    def get_threshold(self, _):
        return self.init_thres


class LinearThresholdPolicy:
    def __init__(self, total_steps, max_anneal_step, init_thres=1.0, min_thres=0.1):
        self.total, self.span, self.hi, self.lo = (
            total_steps,
            max_anneal_step,
            init_thres,
            min_thres,
        )

    def get_threshold(self, step):
        return max(self.lo, self.hi - (self.hi - self.lo) * step / max(1, self.span))
