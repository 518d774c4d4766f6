"""Studies: the results campaign and its page, method comparisons, the view studies, sweeps and the
peer comparison, each run as `python experiments/X.py` (or `python -m experiments.X`); a package
the install provides beside `ssl_jax`, so they import `experiments.*` and `benchmarks.*` as such.
They may use `benchmarks/`, never the other way round."""
