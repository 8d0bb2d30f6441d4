"""Resource evidence for runs recorded with the SDK alone (not under ``flightlog run``).

One sampler per process, whatever the number of active runs: every run of this process shares
the same process tree, so each sample is appended to every active run's writer. Under
``flightlog run`` (``FLIGHTLOG_CAPTURED=1``) the runner samples the whole workload tree, and
the SDK does not sample a second time.
"""

from __future__ import annotations

import os
import threading
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

    def add(self, run: Run) -> None:
        with self._lock:
            self._runs.append(run)
            if self._thread is None:
                from flightlog.resources import ProcessTreeSampler, SamplerThread

                sampler = ProcessTreeSampler(os.getpid(), workdir=os.getcwd())
                self._thread = SamplerThread(sampler, self._fan_out, interval=DEFAULT_INTERVAL,
                                             name="flightlog-resources").start()

    def remove(self, run: Run) -> None:
        with self._lock:
            if run in self._runs:
                self._runs.remove(run)
            thread = self._thread if not self._runs else None
            if thread is not None:
                self._thread = None
        if thread is not None:
            thread.stop()

    def _fan_out(self, sample: dict[str, Any]) -> None:
        with self._lock:
            runs = list(self._runs)
        for run in runs:
            run._w.resources.append(sample)


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
