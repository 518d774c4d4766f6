"""ssl_jax.progress: a start line and a timed end line per phase; nothing after a failure."""

import pytest

from ssl_jax import progress


def test_phase_prints_start_and_duration(capsys, monkeypatch):
    ticks = iter([10.0, 12.25])
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(ticks))
    with progress.phase("embedding the train split"):
        pass
    assert capsys.readouterr().out.splitlines() == [
        "embedding the train split ...",
        "embedding the train split: 2.2 s",
    ]


def test_phase_that_raises_prints_no_duration(capsys):
    with pytest.raises(RuntimeError), progress.phase("fitting"):
        raise RuntimeError("boom")
    assert capsys.readouterr().out.splitlines() == ["fitting ..."]


@pytest.mark.parametrize(
    "seconds, text",
    [(0.04, "0.0 s"), (59.94, "59.9 s"), (185.0, "3 min 05 s"), (3600, "60 min 00 s")],
)
def test_format_seconds(seconds, text):
    assert progress.format_seconds(seconds) == text
