"""The results campaign: grids of cells run a few at a time, each finished cell one JSON file, and
the results page made from the cells.

    python experiments/campaign.py --grid=gpu --minutes=12     # the next cells that fit in 12 min
    python experiments/campaign.py --grid=gpu --list           # every cell and its state
    python experiments/campaign.py --grid=cpu600 --redo=fashion_mnist.mocov2.s0
    python experiments/campaign.py --grid=cpu600 --only=fashion_mnist.jcl.s1   # these, in this order
    python experiments/campaign.py --page=results/README.md   # the page, from every grid's cells

A grid (`experiments/grids.py`) is a fixed list of cells at one budget. The runner takes the cells
that have no result yet, in the grid's order, and runs each: pretraining in
`runs/campaign/<grid>/<cell>` (resumed from its checkpoint if an earlier run was stopped), then the
linear probe and the weighted kNN (the config's `evals.probe_table`: logistic regression on the
pooled last stage, the papers' protocol). Only then is the cell written, at once and whole
(written beside, then renamed): `results/<grid>/<cell>.json` holds the commit, date, device,
wall time, the config's hash and overrides, probe and kNN top-1 and the loss and kNN curves. A
cell killed before that leaves no file and is run again next time; a cell with a file is never
run again unless `--redo` names it. With `--minutes`, a cell is not started when its estimate
(the longest earlier cell of the same method, else of the same kind, of this grid on this device
kind) does not fit in the minutes left; a cell with no estimate yet is started.

On an accelerator machine whose files come back only from one folder, `--results-dir=$OUT/cells`
and `--archive=$OUT/cells.tar` keep every finished cell (the tar is rewritten after each one), and
`--data-dir` points the configs at a carried copy of the data without changing the cells' identity.

This file is the command line (also `python -m experiments.campaign`); the runner is
`campaign_runner.py`, the results page `campaign_page.py`, a cell's config, hash and file
`campaign_cells.py`, the grids `grids.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from experiments import grids  # noqa: E402
from experiments.campaign_cells import RESULTS_DIR, WORK_ROOT  # noqa: E402
from experiments.campaign_page import glance_table, write_page  # noqa: E402
from experiments.campaign_runner import list_grid, run_grid  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=" ".join(__doc__.split("\n\n")[0].split())  # the first paragraph
    )
    parser.add_argument("--grid", choices=sorted(grids.GRIDS), help="run this grid's missing cells")
    parser.add_argument("--minutes", type=float, help="start no cell that cannot finish in time")
    parser.add_argument("--list", action="store_true", help="every cell of --grid and its state")
    parser.add_argument(
        "--redo",
        action="append",
        default=[],
        metavar="CELL",
        help="run this cell again (repeatable)",
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="CELL",
        help="run only these missing cells, in the order given (repeatable)",
    )
    parser.add_argument("--page", metavar="PATH", help="write the results page from the cells")
    parser.add_argument(
        "--glance",
        metavar="GRID.SECTION",
        help="print the README's results-at-a-glance table of one section (cpu600.fashion_mnist)",
    )
    parser.add_argument(
        "--results-dir", default=RESULTS_DIR, help="where the cells' JSON files are"
    )
    parser.add_argument("--work-root", default=WORK_ROOT, help="the runs' checkpoints")
    parser.add_argument("--data-dir", default="", help="read the data from here (not in the hash)")
    parser.add_argument("--archive", default="", help="tar of the grid's cells, after each cell")
    parser.add_argument("--compile-cache", default="", help="JAX's persistent compilation cache")
    args = parser.parse_args(argv)
    if args.compile_cache:
        import jax

        jax.config.update("jax_compilation_cache_dir", args.compile_cache)
    if args.grid and args.list:
        print(list_grid(grids.GRIDS[args.grid], args.results_dir, args.work_root))
    elif args.grid:
        from ssl_jax.run_control import StopRequested

        try:
            run_grid(
                grids.GRIDS[args.grid],
                minutes=args.minutes,
                results_dir=args.results_dir,
                work_root=args.work_root,
                redo=tuple(args.redo),
                only=tuple(args.only),
                data_dir=args.data_dir,
                archive=args.archive,
            )
        except (KeyboardInterrupt, StopRequested) as stop:
            # a stopped cell keeps its checkpoint (the next run resumes it), a finished one its
            # file; exit at once: the interpreter's teardown of TensorFlow can hang here
            print(f"stopped ({stop or 'Ctrl-C'}); the same command goes on from here", flush=True)
            sys.stdout.flush()
            os._exit(130)
    if args.page:
        write_page(args.page, args.results_dir)
    if args.glance:
        grid_name, _, section_key = args.glance.partition(".")
        print("\n".join(glance_table(grids.GRIDS[grid_name], section_key, args.results_dir)))
    if not (args.grid or args.page or args.glance):
        parser.error("give --grid (with --list to list it), --page and/or --glance")


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        main()
