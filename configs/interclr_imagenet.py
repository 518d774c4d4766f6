"""InterCLR on ImageNet as the official code runs it (mmselfsup 0.x
`configs/selfsup/interclr/interclr-moco_resnet50_8xb32-coslr-200e_in1k.py` and its `_base_` model,
dataset and schedule files). Metafile: 68.04% linear top-1.

- MoCo v2 base (`_base_/models/interclr-moco.py`), built by `mocov2_imagenet.py`'s `get_config`
  (whose numbers are these): ResNet-50, `MoCoV2Neck` 2048-2048-128 without BN,
  queue 65536, m 0.999 updated before the keys, τ 0.2 (`ContrastiveHead`, the same for both
  branches), per-GPU BN on 8 GPUs × 32 with shuffle-BN (query and key groups of 32 images).
- Inter branch: 10,000 clusters (faiss k-means of the query encoder's features, 20 iterations, here
  `clustering.kmeans` on device), online labels, centroids every 10 iterations, clusters < 20 refilled;
  16,384 negatives from the semi-hard pool of the 128,000 most similar bank rows (~10 %), MarginNCE
  with m −0.5 (adds 0.5 to the positive cosine), loss 0.75·intra + 0.25·inter, bank momentum 1.0
  (replace): `common.interclr_branch` (the official settings shared by every InterCLR config).
- SGD lr 0.03, momentum 0.9, wd 1e-4, batch 256, 200 epochs, cosine to 0 per epoch (mmcv
  `CosineAnnealing`, `by_epoch` default). MoCo v2 augmentation (RRC 0.2–1, jitter 0.4/0.4/0.4/0.1 p 0.8,
  grayscale 0.2, blur σ 0.1–2 p 0.5, flip).
Ours: the bank and the training set are the first 1,281,152 images (`common.IMAGENET_BANK_ROWS`, 15
left out) so that the bank splits evenly over up to 128 devices. Memory: the bank 1,281,152 × 128 ×
4 B = 656 MB and the labels 5 MB in all, i.e. 82 MB + 0.6 MB per device on 8 devices (the code holds
the whole bank on every GPU and broadcasts it from rank 0 every step); centroids 10,000 × 128 (5 MB)
replicated. The code's sampler draws indices with replacement each epoch; ours visits every image
once per epoch. kNN monitor every 25,000 steps on the first 100,000 training images (ours).
`interclr_imagenet_paper.py` has the paper's numbers where they differ. `:runlocal` keeps the ResNet-50
at full width, trains a few steps on 256 Fashion-MNIST images (8 clusters, 32 negatives, pool 64).
"""

from configs import common, mocov2_imagenet


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = mocov2_imagenet.get_config(arg)
    # C, K and the pool: the code's (10,000, 16,384, 128,000)
    rows = common.IMAGENET_BANK_ROWS
    common.interclr_from_mocov2(c, rows, runlocal=a.runlocal, train_subset=rows)
    # offline labels only: epochs between re-clusterings, the hook's `interval`
    # (`configs/selfsup/_base_/datasets/imagenet_interclr-moco.py:82`)
    c.method_config.offline_every_epochs = 10
    return c
