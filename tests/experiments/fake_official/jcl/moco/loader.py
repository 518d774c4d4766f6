"""A fake JCL `moco/loader.py` (the harness's tests): `MultiCropsTransform` as the official one."""


class MultiCropsTransform:
    def __init__(self, base_transform, k_crops):
        self.base_transform = base_transform
        self.k_crops = k_crops
        assert self.k_crops >= 2

    def __call__(self, x):
        return [self.base_transform(x) for _ in range(self.k_crops)]
