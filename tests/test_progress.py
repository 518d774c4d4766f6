"""ssl_jax.output.progress: a start line and a timed end line per phase; nothing after a failure."""

import gc
import signal
import sys
import time

import pytest

from ssl_jax.output import progress


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


@pytest.fixture
def fresh_interrupts(monkeypatch):
    for name in ("_OPEN", "_INTERRUPTED", "_CTRL_C"):
        monkeypatch.setattr(progress, name, [])


def test_current_names_the_phase_a_ctrl_c_interrupted(fresh_interrupts):
    assert progress.current() is None
    with pytest.raises(KeyboardInterrupt), progress.phase("initialising the state"):
        assert progress.current() == "initialising the state"
        with progress.running("step 6: evals.probe_table"):
            assert progress.current() == "step 6: evals.probe_table"
            progress.interrupt(2, None)
    assert progress.current() == "step 6: evals.probe_table"  # the innermost, after it left


def test_a_swallowed_ctrl_c_is_raised_again_when_its_phase_ends(fresh_interrupts, capsys):
    """Python prints and drops an exception raised in a `__del__` or weakref callback: a Ctrl-C
    that lands there still stops the job, at the end of the phase it came in."""
    with pytest.raises(KeyboardInterrupt), progress.phase("pictures: t-SNE"):
        try:  # as a weakref callback would
            progress.interrupt(2, None)
        except KeyboardInterrupt:
            pass
        reached = True
    assert reached and progress.current() == "pictures: t-SNE"
    assert capsys.readouterr().out.splitlines() == ["pictures: t-SNE ..."]  # no duration line


def test_a_ctrl_c_landing_in_a_gc_callback_comes_again_at_once(fresh_interrupts):
    """A SIGINT handled inside a gc callback (jax registers one) would be printed and dropped:
    the handler sends it again instead, and it stops the code that runs next, within a second."""
    inside, began = [], []

    def callback(phase, info):
        if phase == "stop" and not inside:  # at the end of the collection (its time not counted)
            inside.append(progress._in_a_swallowing_callback(sys._getframe()))
            began.append(time.perf_counter())
            progress.interrupt(signal.SIGINT, sys._getframe())  # returns: sent again in 50 ms

    previous = signal.signal(signal.SIGINT, progress.interrupt)
    gc.callbacks.append(callback)
    try:
        with pytest.raises(KeyboardInterrupt):
            gc.collect()
            time.sleep(5)
    finally:
        gc.callbacks.remove(callback)
        signal.signal(signal.SIGINT, previous)
    assert inside == [True] and time.perf_counter() - began[0] < 1.0
    assert not progress._in_a_swallowing_callback(sys._getframe())
