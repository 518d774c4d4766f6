"""InterCLR on ImageNet as the official code runs it (mmselfsup 0.x
`configs/selfsup/interclr/interclr-moco_resnet50_8xb32-coslr-200e_in1k.py` and its `_base_` model,
dataset and schedule files). Metafile: 68.04% linear top-1.

- MoCo v2 base (`_base_/models/interclr-moco.py`): ResNet-50, `MoCoV2Neck` 2048-2048-128 without BN,
  queue 65536, m 0.999 updated before the keys, τ 0.2 (`ContrastiveHead`, the same for both
  branches), per-GPU BN on 8 GPUs × 32 with shuffle-BN (query and key groups of 32 images).
- Inter branch: 10,000 clusters (faiss k-means of the query encoder's features, 20 iterations, here
  `clustering.kmeans` on device), online labels, centroids every 10 iterations, clusters < 20 refilled;
  16,384 negatives from the semi-hard pool of the 128,000 most similar bank rows (~10 %), MarginNCE
  with m −0.5 (adds 0.5 to the positive cosine), loss 0.75·intra + 0.25·inter, bank momentum 1.0
  (replace).
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

import ml_collections

from configs import common
from ssl_jax import configs
from ssl_jax.data import recipes
from ssl_jax.models import head_config


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = configs.base_config()
    c.method = "interclr"
    c.method_config = ml_collections.ConfigDict(
        dict(
            temperature=0.2,
            queue_size=65536,
            inter_temperature=0.2,
            margin=-0.5,
            intra_weight=0.75,
            inter_weight=0.25,
            sampler="semihard",
            bank_size=common.IMAGENET_BANK_ROWS,
            bank_momentum=1.0,
            labels="online",
            # offline labels only: epochs between re-clusterings, the hook's `interval`
            # (`configs/selfsup/_base_/datasets/imagenet_interclr-moco.py:82`)
            offline_every_epochs=10,
            centroid_every_steps=10,
            min_cluster_size=20,
            kmeans_iters=20,
            # official DDP: 8 GPUs × 32 images, per-GPU BN, keys shuffled across GPUs
            query_bn_group_size=32,
            key_bn_group_size=32,
            shuffle_bn=True,
            **common.interclr_scaled(common.IMAGENET_TRAIN_EXAMPLES),  # C, K, pool: the code's
        )
    )
    c.ema.base = 0.999
    c.ema.schedule = "constant"

    common.imagenet_data(c)
    c.data.train_subset = common.IMAGENET_BANK_ROWS
    if a.runlocal:  # ImageNet is not on CPU CI
        common.fashion_mnist_data(c, channels=3)
        common.interclr_runlocal(c)
    c.data.views = ("mocov2", "mocov2")
    c.data.recipes = ml_collections.ConfigDict({"mocov2": recipes.mocov2(c.data.image_size)})
    common.colour_ops_on_device(c)  # the host cannot feed an accelerator otherwise

    c.model.backbone = "resnet50"
    c.model.dtype = "auto"  # bfloat16 compute on GPU/TPU, float32 on CPU
    c.model.stem = "imagenet"
    c.model.projector = head_config((2048,), 128, use_bn=False)  # MoCoV2Neck 2048-2048-128

    c.global_batch_size = 256
    c.num_epochs = 200.0
    c.optim.name = "sgd"
    c.optim.base_lr = 0.03
    c.optim.weight_decay = 1e-4
    c.optim.schedule = "cosine"
    c.optim.schedule_unit = "epoch"  # mmcv CosineAnnealing with by_epoch=True
    c.evals.knn.update(every_steps=25_000, num_train=100_000)
    if a.runlocal:
        common.runlocal(c)
        c.model.width = 1.0  # the real ResNet-50
        c.model.projector.hidden_dims = (64,)
    return c
