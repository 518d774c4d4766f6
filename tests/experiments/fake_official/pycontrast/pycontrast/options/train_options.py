"""A fake PyContrast `options/train_options.py` (the harness's tests): the command line the
harness writes, the method presets. Not the official code."""

import argparse

PRESETS = {"InfoMin": ("RGB", True, "moco", "D", "mlp", 0.15)}
PARSED = []


class TrainOptions:
    def parse(self):
        p = argparse.ArgumentParser()
        for name in ("--data_folder", "--model_path", "--tb_path", "--method", "--modal"):
            p.add_argument(name, default="")
        for name in ("--mem", "--aug", "--head", "--arch", "--dist-url", "--dist-backend"):
            p.add_argument(name, default="")
        for name in ("--print_freq", "--batch_size", "-j", "--epochs", "--feat_dim"):
            p.add_argument(name, type=int, default=0)
        for name in ("--nce_k", "--world-size", "--rank", "--seed"):
            p.add_argument(name, type=int, default=0)
        for name in ("--learning_rate", "--weight_decay", "--momentum", "--alpha", "--beta"):
            p.add_argument(name, type=float, default=0.0)
        p.add_argument("--nce_t", type=float, default=0.07)
        p.add_argument("--lr_decay_rate", type=float, default=0.1)
        for name in ("--cosine", "--jigsaw", "--multiprocessing-distributed", "--amp"):
            p.add_argument(name, action="store_true")
        opt = p.parse_args()
        if opt.method in PRESETS:
            opt.modal, opt.jigsaw, opt.mem, opt.aug, opt.head, opt.nce_t = PRESETS[opt.method]
        opt.warm, opt.tb_folder = opt.batch_size > 256, opt.tb_path
        PARSED.append(opt)
        return opt
