"""Resource evidence for runs recorded with the SDK alone (not under ``flightlog run``).

One sampler per process, whatever the number of active runs: every run of this process shares
the same process tree, so each sample is appended to every active run's writer. Under
``flightlog run`` (``FLIGHTLOG_CAPTURED=1``) the runner samples the whole workload tree, and
the SDK does not sample a second time.

The sampler and its thread live as long as the process: when its last run finishes the thread
pauses (no sampling, no timer) and the next run resumes it, with a sample right away. So
``finish()`` never joins a thread or waits for a sample in flight, and a sweep of a thousand
short runs creates one thread and one `ProcessTreeSampler`, not a thousand. Cumulative fields
(``cpu_seconds``, disk bytes) therefore count from the process's first sampled run; a run's
own use is the growth between its samples, which is what its summary reports.
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
                from flightlog.resources import SamplerThread

                self._thread = SamplerThread(
                    _OwnTree(), self._fan_out, interval=DEFAULT_INTERVAL, name="flightlog-resources"
                ).start()
            else:
                self._thread.resume()

    def remove(self, run: Run) -> None:
        """Forget a run; with no run left the thread pauses (nothing waits for it)."""
        with self._lock:
            if run in self._runs:
                self._runs.remove(run)
            if not self._runs and self._thread is not None:
                self._thread.pause()

    def _fan_out(self, sample: dict[str, Any]) -> None:
        with self._lock:
            runs = list(self._runs)
        for run in runs:
            run._w.resources.append(sample)


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
