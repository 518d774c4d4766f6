"""A fake `sce/datasets/dict_dataset.py` (the harness's tests): items as dictionaries."""


class DictDataset:
    def __init__(self, dataset):
        self.source_dataset = dataset

    def __getitem__(self, idx):
        views, label = self.source_dataset[idx]
        return {"input": views, "label": label, "idx": idx}

    def __len__(self):
        return len(self.source_dataset)
