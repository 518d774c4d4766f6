"""Weighted kNN evaluation of a pretrained encoder: `python -m ssl_jax.main --config=configs/knn.py
--config.init=PRETRAIN_WORKDIR --workdir=OUT`.

Wu et al. 2018 ("Unsupervised Feature Learning via Non-Parametric Instance Discrimination"), as the
InstDisc / MoCo-style monitors: cosine similarity of L2-normalised backbone features, the k nearest
training features vote with weight exp(sim / τ), τ 0.07, k 20 and 200. The training split is the
memory, the test split the queries; both stay sharded over the devices (ImageNet-size memories).
Dataset and encoder come from the pretraining run unless `--config.data.<key>=` overrides them.
`runlocal`: the first 1024 training and 512 test images.
"""

import ml_collections

from ssl_jax import configs
from ssl_jax.evaluate import jobs


def get_config(arg=None):
    args = [a for a in (arg or "").split(",") if a]
    if any(a != "runlocal" for a in args):
        raise configs.ConfigError(f"config argument {arg!r} is not known; allowed: 'runlocal'")
    c = jobs.job_config("knn")
    c.knn = ml_collections.ConfigDict(
        dict(ks=(20, 200), temperature=0.07, batch_size=256, num_train=-1, num_test=-1)
    )
    if "runlocal" in args:
        c.knn.num_train = 1024
        c.knn.num_test = 512
        c.knn.batch_size = 128
    return c
