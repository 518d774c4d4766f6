"""JCL on ImageNet as the released code runs it (Cai et al., NeurIPS 2020, "Joint Contrastive
Learning with Infinite Possibilities"; official `scripts/main_pretrain.sh` + `main_moco.py`).

From the code (a fork of facebookresearch/moco, MoCo v2 `--mlp --moco-t 0.2 --aug-plus --cos`):
ResNet-50, 224 px, MLP head 2048-2048-128, batch 256, SGD lr 0.03, momentum 0.9, wd 1e-4, cosine
over 200 epochs, queue 65536 of mean keys, m 0.999 (updated before the keys), shuffle-BN over all
key crops (one BN group per device), `k_crops=5` MoCo v2 crops per image → M' = 4 keys, τ 0.2,
`--jcl_lambda 2.0` ramped per epoch as λ·(epoch+1)/epochs. The paper's Sec. 4.1 numbers (M' = 5, λ
4.0, batch 512, lr 0.06) are `jcl_imagenet_paper.py`. `:runlocal` keeps the ResNet-50 but trains a
few steps on 256 Fashion-MNIST images (ImageNet is not on CPU CI).
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_imagenet.py:keys=8,runlocal`.
Built on `mocov2_imagenet.py` (JCL = MoCo v2 + M' key crops + the λ term); `from_mocov2` makes
`jcl_cifar10.py` and `jcl_fashion_mnist.py` from their MoCo v2 configs the same way, and
`jcl_imagenet_paper.py` edits `build`.
"""

from ssl_jax import configs
from ssl_jax.methods import jcl


def from_mocov2(parent, arg=None, edit=None):
    """The MoCo v2 config `configs/<parent>.py` made JCL with the released code's numbers: M' = 4
    keys (`k_crops=5`), λ 2.0 ramped per epoch as λ·(epoch+1)/epochs; τ, queue, m, shuffle-BN, data,
    encoder and optimiser stay MoCo v2's. `edit(config)` (another jcl_* config's numbers) runs
    next, then `:keys=N`; all before `:runlocal`."""
    keys, arg = jcl.split_config_arg(arg)  # `:keys=N` sets M' (and so the views)

    def to_jcl(c):
        c.method = "jcl"
        c.method_config.update(num_keys=4, lam=2.0, lam_schedule="linear_epoch")
        if edit is not None:
            edit(c)
        if keys:
            c.method_config.num_keys = keys
        # one pipeline: view 0 is the query, views 1..M' the keys (MultiCropsTransform(k_crops))
        c.data.views = c.data.views[:1] * (c.method_config.num_keys + 1)

    return configs.sibling(__file__, parent).build(arg, edit=to_jcl)


def build(arg=None, edit=None):
    """This config; `edit(config)` (`jcl_imagenet_paper.py`) runs after JCL's numbers are set."""
    return from_mocov2("mocov2_imagenet", arg, edit)


def get_config(arg=None):
    return build(arg)
