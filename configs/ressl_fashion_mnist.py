"""ReSSL on Fashion-MNIST: the small CPU job of `sce_fashion_mnist.py` with the ReSSL loss.

Not from a paper: everything as `sce_fashion_mnist.py` (built by its `get_config`: weak view
→ target, `fashion_mnist_default` jitter view → online, ResNet-18 at width 1/2 with the stride-2
stem on 28-px grayscale, projector 256 → 256 (BN, ReLU) → 128, queue 4096, momentum 0.99,
shuffle-BN in 8 key BN groups, batch 64, 2400 steps (~2.6 epochs), SGD lr 0.24 × 64/256 = 0.06,
wd 5e-4, no warm-up, final linear-probe table on the last stage's pooled output, no kNN monitor);
only the loss and τ_m change.
The ReSSL loss and τ_m 0.04 as `common.ressl_from_sce` says.
`:runlocal` trains 6 steps of 32 images at width 1/8 with a 256-entry queue.
"""

from configs import common, sce_fashion_mnist


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = common.ressl_from_sce(sce_fashion_mnist.get_config(arg))
    if not a.runlocal:  # no kNN monitor during training
        c.evals.knn.every_steps = -1
        c.evals.knn.num_test = -1
    return c
