"""The loop's run control: the stop vote (SIGTERM/SIGINT → every process stops after the same
step), the metric means of a logging window and the ETA line. Imports only `sharding` of the
package."""

from __future__ import annotations

import collections
import contextlib
import signal

import jax
import jax.numpy as jnp
import numpy as np

from ssl_jax.parallel import sharding


class StopRequested(Exception):  # noqa: N818  (a request, not an error)
    """Raised by `train_and_evaluate` after a SIGTERM/SIGINT (on any process) once the checkpoint of
    the step every process agreed on is saved; no evaluator ran after the request."""

    def __init__(self, step: int, reason: str):
        super().__init__(f"{reason}: stopped after step {step} (checkpoint saved); rerun to resume")
        self.step, self.reason = step, reason


class StopVote:
    """SIGTERM/SIGINT → every process stops after the same step, saves one checkpoint, exits.

    A signal only sets a local flag. One process: the loop reads it once per step. Several processes
    may see their signals at different steps (or only one sees it), and orbax's save is collective,
    so the processes agree: after dispatching each step every process contributes its flag to a tiny
    all-reduce (`any` over one flag per device). Its result is read one step later, so the host never
    waits on the device for it, or at once at steps that synchronise anyway (`sync=True`: log,
    checkpoint, evaluation, last step). All processes read the same votes at the same steps, hence
    stop after the same step.
    """

    def __init__(self, mesh: jax.sharding.Mesh):
        self.signal = None
        self._previous = {}
        self._multi = jax.process_count() > 1
        self._votes: collections.deque = collections.deque()
        if self._multi:
            self._sharding = sharding.batch_sharding(mesh)
            self._num_local = len(mesh.local_devices)
            self._any = jax.jit(jnp.any, out_shardings=sharding.replicated(mesh))

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self._previous[sig] = signal.signal(sig, self._handle)
            except ValueError:  # not the main thread (e.g. notebooks): no handler
                pass
        return self

    def _handle(self, signum, frame):
        self.signal = signal.Signals(signum).name

    @contextlib.contextmanager
    def interruptible(self):
        """A Ctrl-C inside (an evaluation: minutes, no step to stop after) interrupts at once with
        `KeyboardInterrupt`, the step's checkpoint already saved or in flight (the loop finishes
        it); one process only: several must stop together, after a step."""
        if self._multi or signal.SIGINT not in self._previous:
            yield
            return
        outer = self._previous[signal.SIGINT]  # the job's (`progress.interrupt`), else Python's
        signal.signal(signal.SIGINT, outer if callable(outer) else signal.default_int_handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, self._handle)

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def poll(self, *, sync: bool) -> str | None:
        """Called once per step by every process: the reason to stop after this step, or None."""
        if not self._multi:
            return self.signal
        flags = np.full((self._num_local,), self.signal is not None)
        self._votes.append(self._any(jax.make_array_from_process_local_data(self._sharding, flags)))
        stop = False
        while len(self._votes) > (0 if sync else 1):
            stop |= bool(jax.device_get(self._votes.popleft().addressable_data(0)))
        if not stop:
            return None
        return self.signal or "a stop request on another process"


def mean_metrics(window: list[dict]) -> tuple[dict, bool]:
    host = jax.device_get(window)
    finite = all(np.isfinite(m["train/loss"]) for m in host)
    return {k: float(np.mean([m[k] for m in host])) for k in host[-1]}, finite


def format_eta(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m{seconds % 60:02d}s"
