"""JCL on ImageNet with the paper's numbers (Cai et al., NeurIPS 2020, Sec. 4.1, supplementary C).

From the paper: ResNet-50 with a two-layer MLP head (d = 128), M' = 5 positive keys, τ 0.2, λ 4.0,
batch N = 512, lr 0.06 with cosine decay, 200 epochs, SGD momentum 0.9, wd 1e-4, queue 65536 of mean
keys, m 0.999, shuffle-BN over the N × M' concatenated keys, MoCo v2 augmentation ("other settings
strictly follow MoCo v2"). The paper states no λ schedule; it motivates λ by the statistics being
"less informative in the beginning of the training", and the only released code ramps it per epoch,
so the ramp λ·(epoch+1)/epochs is kept here too (`--config.method_config.lam_schedule=constant` for
a fixed λ). The released script's numbers (M' = 4, λ 2.0, batch 256, lr 0.03) are `jcl_imagenet.py`.
`:runlocal` keeps the ResNet-50 but trains a few steps on 256 Fashion-MNIST images.
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_imagenet_paper.py:keys=8,runlocal`.
Built on `jcl_imagenet.py` (itself `mocov2_imagenet.py` + JCL): only the paper's numbers differ.
"""

from ssl_jax import configs


def build(arg=None, edit=None):
    """`jcl_imagenet.build` with the paper's numbers; `edit(config)` (`jcl_imagenet100_r18.py`) runs
    next, before `:keys=N` and `:runlocal`."""

    def paper(c):
        c.method_config.update(num_keys=5, lam=4.0)
        c.global_batch_size = 512
        c.optim.base_lr = 0.06
        c.knn.every_steps = 12_500
        if edit is not None:
            edit(c)

    return configs.sibling(__file__, "jcl_imagenet").build(arg, edit=paper)


def get_config(arg=None):
    return build(arg)
