"""InfoMin's view studies on color_fashion_mnist (`experiments/view_studies.py`): which configs,
which values swept, which seeds, and the sizes. `:size=full` (default, for a GPU) runs every
pretraining config as its file says; `:size=small` shrinks them for 2 CPU cores (a 4,096-image
train subset, 40 steps of g and 60 of CMC at batch 64, narrower encoders: smoke-test sizes whose
accuracies are mostly noise; numbers ours, the time per cell extrapolated from one larger cell); `:size=tiny`
is the tests' (a few steps of 32 images).

- `table5`: Table 5 (Sec. 4.2): g learned `unsupervised` / `supervised` / `semi` from each base
  space (or `raw`: no g, the base space's own split) by `view_config`, then CMC (`cmc_config`) on
  g's views, then the probe. The paper's STL-10 numbers are `paper_table5`.
- `splits`: Fig. 4 / ex. 2: CMC on the 1 | 2 channel split of each colour space (`rgb` = R | GB,
  through the identity g).
- `reverse_u`: Fig. 13 / 14 (appendix C.2): MoCo v2 (`reverse_u.config`) with the RRC lower bound c
  (`crop_low`) or the colour-jitter strength x (`jitter`: ColorJitter(0.8x, 0.8x, 0.8x, 0.2x), SimCLR's
  strength s, whose 1.0 the paper finds the sweet spot; the config's own recipe is x = 0.5) swept.
- `critic`: the held-out I_NCE estimate of every run's views (`view_learning.estimate_i_nce`): a
  critic trained `steps` batches of `batch` training images, scored on `eval_batches` batches of
  test images, Adam at the appendix's critic rate 6e-4, τ of `view_config` (0.1); I_NCE ≤ log batch.
"""

import ml_collections

from configs import common

SIZES = ("full", "small", "tiny")


def get_config(arg=None):
    a = common.parse_arg(arg, size="full")
    if a.size not in SIZES:
        raise ValueError(f"size={a.size!r}; allowed: {SIZES}")
    c = ml_collections.ConfigDict()
    c.size = a.size
    c.seeds = (0, 1, 2)
    c.view_config = "configs/views/color_fashion_mnist.py"
    c.cmc_config = "configs/cmc_color_fashion_mnist.py"
    # `key=value` overrides of every view-learning config / every pretraining config (CMC, MoCo v2)
    c.view_sets = ()
    c.pretrain_sets = ()
    c.cmc_sets = ()  # CMC's own keys (its bank holds one row per training image)
    c.critic = ml_collections.ConfigDict(
        dict(steps=1000, eval_batches=20, batch=256, lr=6e-4, temperature=0.1, train_subset=0)
    )
    c.table5 = ml_collections.ConfigDict(
        dict(bases=("rgb", "ydbdr"), views=("raw", "unsupervised", "supervised", "semi"))
    )
    # STL-10, mean ± std over runs (Table 5)
    c.paper_table5 = ml_collections.ConfigDict(
        dict(
            rgb=dict(
                unsupervised=(82.4, 3.2), supervised=(79.9, 1.5), semi=(86.0, 0.6), raw=(81.5, 0.2)
            ),
            ydbdr=dict(
                unsupervised=(84.3, 0.5), supervised=(78.5, 2.3), semi=(87.0, 0.3), raw=(86.6, 0.2)
            ),
        )
    )
    c.splits = ("lab", "ycbcr", "ydbdr", "rgb")
    c.reverse_u = ml_collections.ConfigDict(
        dict(
            config="configs/mocov2_color_fashion_mnist.py",
            crop_low=(0.08, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0),
            jitter=(0.125, 0.25, 0.5, 1.0, 1.5, 2.0, 2.5),
            sets=(),  # MoCo v2's own keys
        )
    )
    # Sec. 3.3 ex. 1 / appendix B.1 at half the paper's scale: 32-px patch pairs at offset (d, d)
    # from the photos inside scikit-image (centre squares resized to `photo_side`; the paper: 64 px,
    # d 64..384, 2k-px DIV2K), two held out for I_NCE; the critic is the encoder (probe on its
    # embeddings of color_fashion_mnist).
    c.patches = ml_collections.ConfigDict(
        dict(
            photo_side=400,
            patch=32,
            offsets=(32, 64, 96, 128, 160, 192),
            train_photos=(
                "astronaut", "chelsea", "rocket", "motorcycle_left", "hubble_deep_field", "retina",
            ),
            held_out_photos=("coffee", "ihc"),
            steps=3000,
            batch=256,
        )
    )  # fmt: skip
    # Table 4 / Sec. 4.1, rebuilt from Fashion-MNIST: a 28-px item pasted (white, by its alpha) at a
    # uniform position on a `canvas`-px crop of one of scikit-image's photos (the background class);
    # v1 = a scene, v2 = a scene sharing `shared` factors with it and drawing the others anew (the
    # paper's v1 is a frame sequence read by an LSTM: ours is one frame). The critic's f1 is the
    # encoder; tasks: item class, background class (logistic probe), item position (ridge, l2
    # `position_l2` per row: probe_fit.ridge_fitter, error in pixels). Batch 128 as the paper's (B.4).
    c.task_dependence = ml_collections.ConfigDict(
        dict(
            canvas=48,
            photo_side=160,
            shared=(
                ("item",), ("background",), ("position",), ("background", "item", "position"),
                ("background", "item"), ("background", "position"), ("item", "position"),
            ),
            steps=3000,
            batch=128,
            eval_train=10000,
            eval_test=2000,
            position_l2=1e-4,
        )
    )  # fmt: skip
    # Table 4 (error %: digit cls., background cls.; digit loc. error pixels, 64-px canvas)
    c.paper_table4 = ml_collections.ConfigDict(
        {
            "item": (16.8, 88.6, 13.6),
            "background": (88.6, 51.7, 16.1),
            "position": (57.9, 87.6, 3.95),
            "background,item,position": (88.8, 56.3, 16.2),
            "background,item": (88.2, 53.9, 16.3),
            "background,position": (88.8, 53.8, 15.9),
            "item,position": (14.5, 88.9, 13.7),
        }
    )
    if a.size == "small":
        # ~5-7x less training than a measured larger cell (docs/experiments/infomin.md)
        subset = 4096
        c.view_sets = (
            f"data.train_subset={subset}",
            f"data.shuffle_buffer={subset}",
            "global_batch_size=64",
            "num_labelled=512",
            "steps=40",
            "log_every=20",
        )
        c.pretrain_sets = (
            f"data.train_subset={subset}",
            f"data.shuffle_buffer={subset}",
            "global_batch_size=64",
            "total_steps=60",
            "model.width=0.25",
            "evals.probe_table.num_train=2048",
        )
        c.cmc_sets = (f"method_config.bank_size={subset}", "method_config.num_negatives=1024")
        c.critic.update(steps=40, eval_batches=4, batch=64, train_subset=subset)
        c.reverse_u.update(crop_low=(0.08, 0.2, 0.5, 1.0), jitter=(0.125, 0.5, 1.0, 2.5))
        c.patches.update(offsets=(32, 64, 128, 192), steps=300, batch=128)
        c.task_dependence.update(steps=200, eval_train=2000, eval_test=1000)
    elif a.size == "tiny":
        c.seeds = (0,)
        c.view_sets = (
            "data.train_subset=64",
            "data.shuffle_buffer=64",
            "global_batch_size=16",
            "num_labelled=32",
            "steps=2",
            "log_every=1",
        )
        c.pretrain_sets = (
            "data.train_subset=64",
            "data.shuffle_buffer=64",
            "global_batch_size=16",
            "total_steps=2",
            "model.width=0.125",
            "model.projector.out_dim=16",
            "evals.probe_table.num_train=64",
            "evals.probe_table.batch_size=32",
            "evals.probe_table.knn_k=5",
        )
        c.cmc_sets = ("method_config.bank_size=64", "method_config.num_negatives=16")
        c.critic.update(steps=2, eval_batches=1, batch=16, train_subset=64)
        c.patches.update(offsets=(32, 160), steps=2, batch=16)
        c.task_dependence.update(
            shared=(("item",), ("background", "position")),
            steps=2,
            batch=16,
            eval_train=64,
            eval_test=32,
        )
        c.reverse_u.update(
            crop_low=(0.2, 1.0),
            jitter=(0.5,),
            sets=("method_config.queue_size=32", "method_config.key_bn_group_size=8"),
        )
    return c
