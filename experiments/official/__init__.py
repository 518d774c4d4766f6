"""The official implementations trained beside ours (`checkouts.py`: what and which commit, the
shims; `harness.py`: the official side, in its own venv; `runner.py`: our side, for
`campaign.py`'s `official_*` grids). The page: results/official.md."""
