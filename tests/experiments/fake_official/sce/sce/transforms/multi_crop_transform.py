"""A fake `sce/transforms/multi_crop_transform.py` (the harness's tests): `MultiCropTransform`
with the official signature."""


class MultiCropTransform:
    def __init__(self, set_transforms):
        self.transforms = []
        for set_transform in set_transforms:
            self.transforms.extend([set_transform["transform"]] * set_transform["num_views"])

    def __call__(self, img):
        return [transform(img) for transform in self.transforms]
