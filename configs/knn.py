"""Weighted kNN evaluation of a pretrained encoder: `python -m ssl_jax.main --config=configs/knn.py
--config.init=PRETRAIN_WORKDIR --workdir=OUT`.

Wu et al. 2018 ("Unsupervised Feature Learning via Non-Parametric Instance Discrimination"), as the
InstDisc / MoCo-style monitors: cosine similarity of L2-normalised backbone features, the k nearest
training features vote with weight exp(sim / τ), τ 0.07, k 20 and 200. The training split is the
memory, the test split the queries; both stay sharded over the devices (ImageNet-size memories).
Dataset and encoder come from the pretraining run unless `--config.data.<key>=` overrides them.
`knn.features`: 'pooled' (default: the last stage's pool, the papers' protocol) or 'stages' (every
stage's pool, concatenated: 960-d for a ResNet-18, what the default job's probe table reads).
`runlocal`: the first 1024 training and 512 test images.
"""

import ml_collections

from configs import common
from ssl_jax.evaluate import jobs


def get_config(arg=None):
    a = common.parse_arg(arg)
    c = jobs.job_config("knn")
    c.knn = ml_collections.ConfigDict(
        dict(
            ks=(20, 200),
            temperature=0.07,
            batch_size=256,
            num_train=-1,
            num_test=-1,
            features="pooled",  # 'pooled' (last stage) | 'stages' (every stage's pool)
        )
    )
    if a.runlocal:
        c.knn.num_train = 1024
        c.knn.num_test = 512
        c.knn.batch_size = 128
    return c
