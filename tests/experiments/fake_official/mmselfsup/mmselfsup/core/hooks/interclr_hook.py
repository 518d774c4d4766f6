"""Fake `InterCLRHook`: k-means of the extractor's features before the run (and offline every
`interval` epochs), the centroid and small-cluster calls every n iterations; it keeps the epochs
its `deepcluster` ran at and the loss weights of each epoch."""

import numpy as np
import torch
import torch.distributed as dist
from mmcv.runner import HOOKS, Hook
from mmcv.utils import print_log

from mmselfsup.utils import Extractor
from mmselfsup.utils import clustering as _clustering

INSTANCES = []  # each hook made (the test reads the last)


@HOOKS.register_module()
class InterCLRHook(Hook):
    def __init__(
        self,
        extractor,
        clustering,
        centroids_update_interval,
        deal_with_small_clusters_interval,
        evaluate_interval,
        warmup_epochs=0,
        init_memory=True,
        initial=True,
        online_labels=True,
        interval=1,
        dist_mode=True,
        data_loaders=None,
    ):
        assert dist_mode, "non-dist mode is not implemented"
        self.extractor = Extractor(dist_mode=dist_mode, **extractor)
        self.clustering_type = clustering.pop("type")
        self.clustering_cfg = clustering
        self.centroids_update_interval = centroids_update_interval
        self.deal_with_small_clusters_interval = deal_with_small_clusters_interval
        self.init_memory, self.initial = init_memory, initial
        self.online_labels, self.interval = online_labels, interval
        self.clustered_at, self.weights = [], []
        INSTANCES.append(self)

    def before_run(self, runner):
        self.intra_loss_weight = runner.model.module.intra_loss_weight
        self.inter_loss_weight = runner.model.module.inter_loss_weight
        if self.initial:
            self.deepcluster(runner)

    def before_train_epoch(self, runner):
        module = runner.model.module
        module.intra_loss_weight, module.inter_loss_weight = (
            self.intra_loss_weight,
            self.inter_loss_weight,
        )
        self.weights.append((runner.epoch, runner.optimizer.param_groups[0]["lr"]))

    def after_train_iter(self, runner):
        if not self.online_labels:
            return
        if self.every_n_iters(runner, self.centroids_update_interval):
            runner.model.module.memory_bank.update_centroids_memory()
        if self.every_n_iters(runner, self.deal_with_small_clusters_interval):
            runner.model.module.memory_bank.deal_with_small_clusters()

    def after_train_epoch(self, runner):
        if not self.online_labels and self.every_n_epochs(runner, self.interval):
            self.deepcluster(runner)

    def deepcluster(self, runner):
        self.clustered_at.append(runner.epoch)
        runner.model.eval()
        features = self.extractor(runner)
        runner.model.train()
        algo = _clustering.__dict__[self.clustering_type](**self.clustering_cfg)
        algo.cluster(features, verbose=True)
        labels = torch.from_numpy(algo.labels.astype(np.int64)).cuda()
        dist.broadcast(labels, 0)
        labels = labels.cpu().numpy()
        np.save(f"{runner.work_dir}/cluster_epoch_{runner.epoch}.npy", labels)
        print_log(f"clusters: {np.bincount(labels)}", logger="mmselfsup")
        if not (self.online_labels or self.init_memory):
            runner.model.module.memory_bank.assign_label(labels)
        if self.init_memory:
            runner.model.module.memory_bank.init_memory(features, labels)
            self.init_memory = False
