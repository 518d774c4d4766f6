"""Timing tools: scripts that print figures and ratios (img/s, ms per call, memory), each run as
`python benchmarks/X.py`; shared set-up in `_common.py`."""
