"""Fake `Extractor`: the model's `extract` forward and its neck over a data set in order."""

from torch.utils.data import Dataset

from mmselfsup.utils import dist_forward_collect, nondist_forward_collect


class Extractor:
    def __init__(self, dataset, samples_per_gpu, workers_per_gpu, dist_mode=False, **kwargs):
        from mmselfsup import datasets

        if not isinstance(dataset, Dataset):
            raise TypeError(f"dataset must be a Dataset object or a dict, not {type(dataset)}")
        self.dataset = dataset
        self.data_loader = datasets.build_dataloader(
            dataset,
            samples_per_gpu=samples_per_gpu,
            workers_per_gpu=workers_per_gpu,
            dist=dist_mode,
            shuffle=False,
            persistent_workers=True,
        )
        self.dist_mode = dist_mode

    def __call__(self, runner):
        def func(**x):
            feat = runner.model.module.neck([runner.model(mode="extract", **x)[-1]])[0]
            return dict(feature=feat.cpu())

        if self.dist_mode:
            return dist_forward_collect(func, self.data_loader, runner.rank, len(self.dataset))[
                "feature"
            ]
        return nondist_forward_collect(func, self.data_loader, len(self.dataset))["feature"]
