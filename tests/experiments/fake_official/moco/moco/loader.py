"""A fake `moco/loader.py` (the harness's tests): `TwoCropsTransform` as the official one."""


class TwoCropsTransform:
    def __init__(self, base_transform):
        self.base_transform = base_transform

    def __call__(self, x):
        return [self.base_transform(x), self.base_transform(x)]
