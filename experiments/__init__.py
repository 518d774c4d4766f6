"""Studies: the results campaign and its page, method comparisons, the view studies, sweeps and the
peer comparison, each run as `python experiments/X.py`; they may use `benchmarks/`, never the
other way round."""
