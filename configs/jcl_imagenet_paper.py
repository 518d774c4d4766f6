"""JCL on ImageNet with the paper's numbers (Cai et al., NeurIPS 2020, Sec. 4.1, supplementary C).

Everything as `jcl_imagenet.py` (built by its `get_config`: the released code's numbers, which are
the paper's too: ResNet-50 with a two-layer MLP head (d = 128), τ 0.2, cosine decay, 200 epochs, SGD
momentum 0.9, wd 1e-4, queue 65536 of mean keys, m 0.999, shuffle-BN over the concatenated keys,
MoCo v2 augmentation — "other settings strictly follow MoCo v2": the rest is `mocov2_imagenet.py`'s
numbers) except the paper's M' = 5 positive keys (the `:keys` default; the released script's
`k_crops=5` is M' = 4), λ 4.0 (code 2.0), batch N = 512 (code 256), lr 0.06 (code 0.03). The paper
states no λ schedule; it motivates λ by the statistics being "less informative in the beginning of
the training", and the only released code ramps it per epoch, so the ramp λ·(epoch+1)/epochs is kept
here too (`--config.method_config.lam_schedule=constant` for a fixed λ). Ours: BN groups of 64
queries and M'·64 keys (MoCo v2's per-GPU BN on 8 GPUs, 512 / 8; the paper does not give its GPU
count), kNN monitor every 12,500 steps (the 25,000 of `mocov2_imagenet.py` at twice the batch),
float32 compute (`model.dtype`; the parent's is 'auto').
`:runlocal` as `jcl_imagenet.py` (the same 32-image batch and BN groups): the ResNet-50, a few steps
on 256 Fashion-MNIST images.
`:keys=N` sets M' (and so the views), e.g. `--config=configs/jcl_imagenet_paper.py:keys=8,runlocal`.
"""

from configs import common, jcl_imagenet


def get_config(arg=None):
    a = common.parse_arg(arg, keys=5)  # M' = 5 (paper Sec. 4.1)
    c = jcl_imagenet.get_config(f"keys={a.keys}" + (",runlocal" if a.runlocal else ""))
    c.method_config.lam = 4.0
    c.model.dtype = "float32"  # not the parent's 'auto'
    c.optim.base_lr = 0.06
    if not a.runlocal:  # `:runlocal` shrinks both files to the same batch and BN groups
        c.global_batch_size = 512
        # MoCo v2's per-GPU BN on 8 GPUs (our reading: 512 / 8 = 64 queries and M'·64 keys after
        # the shuffle per BN group; the paper does not give its GPU count)
        c.method_config.update(query_bn_group_size=64, key_bn_group_size=64 * a.keys)
        c.evals.knn.every_steps = 12_500  # the 25,000 of `mocov2_imagenet.py` at twice the batch
    return c
