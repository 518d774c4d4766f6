"""A fake PyContrast `datasets/RandAugment.py` (the harness's tests): `rand_augment_transform`
keeps its config string and hparams. Not the official code."""


class RandAugment:
    def __init__(self, config_str, hparams, use_cmc):
        self.config_str, self.hparams, self.use_cmc = config_str, hparams, use_cmc

    def __call__(self, image):
        return image


def rand_augment_transform(config_str, hparams, use_cmc=False):
    return RandAugment(config_str, hparams, use_cmc)
