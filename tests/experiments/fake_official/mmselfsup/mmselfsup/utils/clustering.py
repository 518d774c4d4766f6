"""Fake k-means through faiss's GPU classes, as the official `run_kmeans`; faiss as imported."""

import numpy as np

try:
    import faiss
except ImportError:
    faiss = None


class Kmeans:
    def __init__(self, k, pca_dim=256):
        self.k, self.pca_dim = k, pca_dim

    def cluster(self, feat, verbose=False):
        assert feat.dtype == np.float32
        x = feat / (np.linalg.norm(feat, axis=1, keepdims=True) + 1e-10)
        clus = faiss.Clustering(x.shape[1], self.k)
        clus.seed = np.random.randint(1234)  # noqa: NPY002 (as the official run_kmeans)
        clus.niter = 20
        index = faiss.GpuIndexFlatL2(
            faiss.StandardGpuResources(), x.shape[1], faiss.GpuIndexFlatConfig()
        )
        clus.train(x, index)
        _, assignment = index.search(x, 1)
        self.losses = faiss.vector_to_array(clus.obj)
        self.labels = np.array([int(n[0]) for n in assignment])
        return self.losses[-1]
