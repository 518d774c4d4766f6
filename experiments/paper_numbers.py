"""Reported top-1 accuracies (percent) transcribed from the five seed papers: `PAPER_NUMBERS`,
{method key: [entry, ...]}, read from `paper_numbers.json` beside this file, and `closest`, the
entry the results page shows beside a method.

Sources (the papers' plain-text copies; file names below):
  SCE      = Denize et al., "Similarity Contrastive Estimation for Self-Supervised Soft Contrastive
             Learning", WACV 2023 (HAL cea-04166419)  -> sce_similarity_contrastive_estimation.txt
  JCL      = Cai et al., "Joint Contrastive Learning with Infinite Possibilities", NeurIPS 2020
             -> jcl_joint_contrastive_learning.txt
  InterCLR = Xie et al., "Delving into Inter-Image Invariance for Unsupervised Visual Representations",
             arXiv 2008.11702 (2020 version; NOT the IJCV 2022 version, so it has NO MoCo v2 baselines
             and NO CIFAR/STL results) -> interclr_inter_image_invariance.txt
  InfoMin  = Tian et al., "What Makes for Good Views for Contrastive Learning?", NeurIPS 2020
             -> infomin_good_views.txt
  Ring     = Wu et al., "Conditional Negative Sampling for Contrastive Learning of Visual
             Representations", ICLR 2021 -> ring_conditional_negative_sampling.txt

Only numbers that appear in those texts are listed. Baselines reported inside a paper (cited or
re-run) count and are filed under the baseline's key, with 'source' naming the paper that printed
them. Numbers the papers only show in figures (e.g. Ring Fig. 2 kNN curves, JCL Fig. 2 ablations,
InterCLR Fig. 6/8, InfoMin Figs. 3-5/7-9/12-14) are NOT included because no values are in the text.

Entry keys: dataset, protocol, top1, setting, source; optional: variant, note, std, top5.
'protocol' is as the paper says it: 'linear' = linear classifier on frozen features trained and
tested on the same dataset ('Transfer Acc.' in the Ring paper is this: logistic regression on frozen
features of the pretraining dataset); 'linear-transfer' = frozen features from one dataset, linear
classifier on another.

Extra keys beyond our method names: 'infomin_views' (InfoMin Table 5, learned views on STL-10),
'moco_v1' (original MoCo, He et al. 2019, which several papers list and which is not MoCo v2),
'la' (Local Aggregation, the Ring paper's extra baseline).

Caveats worth knowing before comparing with our runs:
  * SCE small/medium-dataset (CIFAR-10/100, STL-10, Tiny-ImageNet) implementation details are in
    the SCE supplementary, which is not in our text. The official code's only small-data config
    (CIFAR-10) is ResNet-18 (3x3 stem), 200 ep, batch 256, queue 4096 (CEA-LIST/SCE
    `sce/configs/run/pretrain/sce/resnet18/resnet18_cifar10.yaml`) -- from code, not the paper.
  * Ring paper: ResNet-18 (two ResNet-18s for CMC), inputs resized to 256 / 224 crops even for
    CIFAR, 300 epochs, batch 256 (128 for CMC), tau 0.07, linear probe on the 512x7x7 pre-pool
    features. The official code differs (200 ep, 512-d avgpool: mhw32/contrastive-ring-public
    `config/pretrain/*/*.json`, `config/transfer.json`, `src/systems/systems.py` `TransferSystem`).
  * Ring Table 2(b) (ImageNet lesions): the IRing(w_u=100) ImageNet value is missing from our text
    copy (lost in PDF extraction); only 'No Anneal' = 41.3 is readable.
"""

from __future__ import annotations

import json
import pathlib

FILE = pathlib.Path(__file__).resolve().with_suffix(".json")  # the transcribed entries
PAPER_NUMBERS: dict[str, list[dict]] = json.loads(FILE.read_text(encoding="utf-8"))

# The order in which the results page looks for a method's closest reported setting: small data sets
# first (the embedded data sets are small), then ImageNet's linear probe.
PREFERENCE = ("CIFAR-10", "STL-10", "CIFAR-100", "Tiny-ImageNet", "ImageNet")
# Entries that are not the method as published: lesions, ablations and extensions.
NOT_THE_METHOD = ("no annealing", "ball", "ablation", "Cave", "(+C_i)", "lambda=1", "transfer")


def closest(key: str) -> dict | None:
    """The paper's figure for a method in the setting closest to ours: the first data set of
    `PREFERENCE` it reports under the linear protocol, for the method itself (no lesion)."""
    entries = [
        e
        for e in PAPER_NUMBERS.get(key, [])
        if e["protocol"] == "linear"
        and not any(word in e.get("variant", "") for word in NOT_THE_METHOD)
    ]
    for dataset in PREFERENCE:
        for entry in entries:
            if entry["dataset"] == dataset:
                return entry
    return entries[0] if entries else None


if __name__ == "__main__":
    for k, v in PAPER_NUMBERS.items():
        print(f"{k:14s} {len(v):3d} entries")
