"""IR (the Ring/CNCE code's `NCE` baseline) on STL-10: the code's numbers.

ResNet-18 with the ImageNet stem + MLP 512→512→128, batch 256, SGD lr 0.03 momentum 0.9 wd 1e-4, 200
epochs with ×0.1 at int(0.68·200) = 136 and int(0.83·200) = 166, τ 0.07, k − 1 = 4095 draws from a
bank of all 5,000 training images with m 0 (rows replaced), initialised uniform in ±1/√(128/3) then
L2-normalised (`method_config.bank_init`, `src/objectives/memory.py` L17–24). Input as the code's
default transforms: images upsampled to 224 px (RRC 0.2–1, grayscale 0.2, colour jitter 0.4 always,
flip, ImageNet mean/std; eval Resize 256 / CenterCrop 224); `:mocov2_32x32` the code's 32-px MoCo v2
transforms, blur p 0.5 included (`common.ring_code_transforms`). No ring: the baseline of
`iring_stl10.py` (same numbers, uniform negatives). Sources: mhw32/contrastive-ring-public @fb3e1c2
(`config/pretrain/{nce,mocov2}/*.json`, `src/systems/systems.py`,
`src/objectives/{instdisc,moco,memory}.py`, `src/utils/policy.py`, `src/datasets/datasets.py`).
`:runlocal` trains a few steps on Fashion-MNIST (3 channels) with a bank/queue of 256.
"""

from configs import common, ir_cifar100


def get_config(arg=None):
    a = common.parse_arg(arg, mocov2_32x32=False)
    c = ir_cifar100.get_config(arg)
    if not a.runlocal:
        c.method_config.bank_size = 5000  # every training image
        common.stl10_labelled_data(c)  # the 5,000 labelled images, as the code
        common.ring_code_transforms(c, "ring", 1, a.mocov2_32x32)  # upsampled again
    return c
