"""JCL on ImageNet as the released code runs it (Cai et al., NeurIPS 2020, "Joint Contrastive
Learning with Infinite Possibilities"; official `scripts/main_pretrain.sh` + `main_moco.py`).

From the code (a fork of facebookresearch/moco, MoCo v2 `--mlp --moco-t 0.2 --aug-plus --cos`):
ResNet-50, 224 px, MLP head 2048-2048-128, batch 256, SGD lr 0.03, momentum 0.9, wd 1e-4, cosine
over 200 epochs, queue 65536 of mean keys, m 0.999 (updated before the keys), shuffle-BN over all
key crops (one BN group per device), `k_crops=5` MoCo v2 crops per image → M' = 4 keys, τ 0.2,
`--jcl_lambda 2.0` ramped per epoch as λ·(epoch+1)/epochs. The paper's Sec. 4.1 numbers (M' = 5, λ
4.0, batch 512, lr 0.06) are `jcl_imagenet_paper.py`. Everything but the method is
`mocov2_imagenet.py`'s numbers (JCL = MoCo v2 + M' key crops + the λ term), including the kNN
monitor (every 25,000 steps, 100,000 training images). `:runlocal` keeps the ResNet-50 but trains a
few steps on 256 Fashion-MNIST images (ImageNet is not on CPU CI) with a 256-entry queue.
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_imagenet.py:keys=8,runlocal`.
"""

from configs import common, mocov2_imagenet


def get_config(arg=None):
    a = common.parse_arg(arg, keys=4)  # M' = 4: the released script's `k_crops=5`
    return common.jcl_from_mocov2(
        mocov2_imagenet.get_config(common.parent_arg(arg, "keys")), a.keys
    )
