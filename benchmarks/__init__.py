"""Timing tools: scripts that print figures and ratios (img/s, ms per call, memory), each run as
`python benchmarks/X.py` (or `python -m benchmarks.X`, where the checkout is not installed);
shared set-up in `_common.py`."""
