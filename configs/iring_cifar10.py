"""IRing (CNCE with a memory bank, the code's `NCERing`) on CIFAR-10: the code's numbers.

ResNet-18 with the ImageNet stem + MLP 512→512→128, batch 256, SGD lr 0.03 momentum 0.9 wd 1e-4, 200
epochs with ×0.1 at int(0.68·200) = 136 and int(0.83·200) = 166, τ 0.07, k − 1 = 4095 draws from a
bank of all 50,000 training images with m 0 (rows replaced), initialised uniform in ±1/√(128/3) then
L2-normalised (`method_config.bank_init`, `src/objectives/memory.py` L17–24). Input as the code's
default transforms: images upsampled to 224 px (RRC 0.2–1, grayscale 0.2, colour jitter 0.4 always,
flip, ImageNet mean/std; eval Resize 256 / CenterCrop 224); `:mocov2_32x32` the code's 32-px MoCo v2
transforms, blur p 0.5 included (`common.ring_code_transforms`). Baseline: `ir_cifar10.py` keeps
IR's m 0.5 and 32 px (set `method_config.bank_momentum=0.0`, `model.stem=imagenet` and the
transforms here to get the code's `NCE` baseline). Annealing: off by default, as every released
config (`ConstantThresholdPolicy(0.1)`); `:anneal=linear` is the paper's setting (outer 1.0 → 0.1
over 100 epochs of steps, then 0.1); `:anneal=step|exponential|adaptive_loss` the code's other
policies; `:ball` the ball lesion (no inner cut). Sources: mhw32/contrastive-ring-public @fb3e1c2
(`config/pretrain/{nce,mocov2}/*.json`, `src/systems/systems.py`,
`src/objectives/{instdisc,moco,memory}.py`, `src/utils/policy.py`, `src/datasets/datasets.py`).
`:runlocal` trains a few steps on Fashion-MNIST (3 channels) with a bank/queue of 256.
"""

from configs import common, iring_cifar100


def get_config(arg=None):
    a = common.parse_arg(arg, anneal="constant", ball=False, mocov2_32x32=False)
    c = iring_cifar100.get_config(arg)
    if not a.runlocal:
        c.data.name = "cifar10"
    return c
