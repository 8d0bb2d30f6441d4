"""Resource evidence for runs recorded with the SDK alone (not under ``flightlog run``).

One sampler per process, whatever the number of active runs: every run of this process shares
the same process tree, so each sample is appended to every active run's writer. Under
``flightlog run`` (``FLIGHTLOG_CAPTURED=1``) the runner samples the whole workload tree, and
the SDK does not sample a second time.

The sampler and its thread live as long as the process: when its last run finishes the thread
pauses (no sampling, no timer) and the next run resumes it, with a sample right away — or, when
the process was sampled less than an interval ago (the run before it just ended), with a copy of
that sample, and the next one on the thread's schedule; a run that ends before its first reading
is given the latest one at its end. So ``finish()`` never joins a thread (it waits, once a
process, for the very first reading), a sweep of a thousand short runs creates one thread and one
`ProcessTreeSampler`, not a thousand, and reads the process once an interval, not once a run:
every run still has a reading of its process. Cumulative fields
(``cpu_seconds``, disk bytes) therefore count from the process's first sampled run; a run's
own use is the growth between its samples, which is what its summary reports.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flightlog.sdk.run import Run

__all__ = ["start_run_sampler", "DEFAULT_INTERVAL"]

DEFAULT_INTERVAL = 1.0


class _ProcessSampler:
    def __init__(self) -> None:
        self._runs: list[Run] = []
        self._lock = threading.Lock()
        self._thread: Any = None
        self._recent: tuple[float, dict[str, Any]] | None = None  # (monotonic time, the latest sample)
        self._read: set[str] = set()  # the active runs that have a reading of their process
        self._first = threading.Event()  # the process has been read at least once

    def add(self, run: Run) -> None:
        with self._lock:
            self._runs.append(run)
            if self._thread is None:
                from flightlog.resources import SamplerThread

                self._thread = SamplerThread(
                    _OwnTree(), self._fan_out, interval=DEFAULT_INTERVAL, name="flightlog-resources"
                ).start()
                return
            recent = self._recent
            fresh = recent is not None and time.monotonic() - recent[0] < DEFAULT_INTERVAL
            if fresh:  # the process's reading of a moment ago is the new run's first (module doc)
                self._give(run, recent[1])  # type: ignore[index]
            self._thread.resume(at_once=not fresh)

    def remove(self, run: Run) -> None:
        """Forget a run; with no run left the thread pauses (nothing waits for it). A run that
        ended before the thread read the process for it gets the latest reading: every run has
        one (the process's very first reading is waited for, up to a second, once a process)."""
        if run.id not in self._read:
            if not self._first.is_set():
                self._first.wait(_FIRST_WAIT)
            with self._lock:
                if self._recent is not None and run.id not in self._read:
                    self._give(run, self._recent[1])
        with self._lock:
            self._read.discard(run.id)
            if run in self._runs:
                self._runs.remove(run)
            if not self._runs and self._thread is not None:
                self._thread.pause()

    def _give(self, run: Run, sample: dict[str, Any]) -> None:
        run._w.resources.append(dict(sample))
        self._read.add(run.id)

    def _fan_out(self, sample: dict[str, Any]) -> None:
        with self._lock:
            self._recent = (time.monotonic(), sample)
            runs = list(self._runs)
            self._read.update(r.id for r in runs)
        self._first.set()
        for run in runs:
            run._w.resources.append(sample)


_FIRST_WAIT = 1.0  # seconds a run's end waits for the process's first reading


class _OwnTree:
    """This process's tree, the `ProcessTreeSampler` built on the sampler thread's first tick
    (its imports and its first reading of the tree are not the training loop's to pay)."""

    def __init__(self) -> None:
        self._sampler: Any = None

    def sample(self, now: float | None = None) -> dict[str, Any]:
        if self._sampler is None:
            from flightlog.resources import ProcessTreeSampler

            self._sampler = ProcessTreeSampler(os.getpid(), workdir=os.getcwd())
        sample: dict[str, Any] = self._sampler.sample(now)
        return sample


_sampler = _ProcessSampler()


class _Handle:
    def __init__(self, run: Run) -> None:
        self._run = run

    def stop(self) -> None:
        _sampler.remove(self._run)


def start_run_sampler(run: Run) -> _Handle | None:
    if os.environ.get("FLIGHTLOG_CAPTURED") == "1":
        return None
    _sampler.add(run)
    return _Handle(run)


def _reset_after_fork() -> None:
    global _sampler
    _sampler = _ProcessSampler()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
