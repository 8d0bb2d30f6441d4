"""The background thread that samples at a fixed interval and hands each sample on.

Why these rules: the thread lives inside the runner and inside training processes (via
``flightlog.init``), so it must never take the host process down or hold it up. It is a
daemon; it waits on an Event so `stop` returns at once rather than after a sleep; it ticks on
a fixed schedule (no drift, missed ticks skipped rather than bunched); and any exception from
sampling or from the callback is caught, counted, and reported once on stderr.

`pause` and `resume` let one thread serve many short-lived consumers (the SDK's runs): a
paused thread waits without sampling and without a timer, and resuming it costs no new
thread, no new sampler and no join, which a sweep of a thousand short runs would feel.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from flightlog.forksafe import no_fork
from flightlog.notices import notice

__all__ = ["Sampler", "SamplerThread"]


class Sampler(Protocol):
    """Anything with ``sample(now) -> dict``; `ProcessTreeSampler` is the one flightlog ships."""

    def sample(self, now: float | None = None) -> dict[str, Any]: ...


class SamplerThread:
    """Calls ``on_sample(sampler.sample())`` every ``interval`` seconds until `stop`."""

    def __init__(
        self,
        sampler: Sampler,
        on_sample: Callable[[dict[str, Any]], None],
        interval: float = 1.0,
        name: str = "flightlog-sampler",
    ) -> None:
        if interval <= 0:
            raise ValueError(f"sampling interval must be positive, got {interval!r}")
        self.sampler = sampler
        self.on_sample = on_sample
        self.interval = interval
        self.samples = 0
        self.errors = 0
        self.last_error: BaseException | None = None
        self._stop = threading.Event()
        self._wake = threading.Event()  # stop or resume asked: look at the flags again
        self._paused = False
        self._parked = False  # waiting, paused, with no timer: a resume must wake it
        self._state = threading.Lock()  # `_paused` and `_parked` read and set together
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> SamplerThread:
        self._thread.start()
        return self

    def stop(self, timeout: float = 2.0) -> bool:
        """Ask the thread to end and wait up to ``timeout`` s; True when it has ended."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self) -> None:
        """Stop sampling until `resume`, without waiting: a sample in flight still completes, and
        the thread parks (no timer) at its next tick rather than being woken now: a sweep of
        short runs, each pausing and resuming it, costs it no wake-up per run."""
        self._paused = True

    def resume(self, *, at_once: bool = True) -> None:
        """Sample again, the first sample right away (with ``at_once=False``: at the next tick of
        the thread's schedule, waking it only if it had parked); a no-op when not paused."""
        with self._state:
            if not self._paused:
                return
            self._paused = False
            if at_once or self._parked:
                self._wake.set()

    def __enter__(self) -> SamplerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _tick(self) -> None:
        try:
            with no_fork():  # local reads whose first use imports code: see flightlog.forksafe
                sample = self.sampler.sample()
            # outside the guard: a callback that blocks (a store that hangs) must not hold every
            # os.fork() and every other guarded step of the process with it
            self.on_sample(sample)
            self.samples += 1
        except Exception as exc:
            self.errors += 1
            self.last_error = exc
            if self.errors == 1:
                notice(
                    f"resource sampling error: {type(exc).__name__}: {exc} (further errors are counted, not printed)"
                )

    def _run(self) -> None:
        # The flags are set before `_wake` and read after it is cleared, so no request is lost.
        while True:
            self._wake.clear()
            if self._stop.is_set():
                return
            with self._state:
                self._parked = self._paused
            if self._parked:
                self._wake.wait()
                with self._state:
                    self._parked = False
            else:
                self._sample_until_woken()

    def _sample_until_woken(self) -> None:
        start = time.monotonic()
        tick = 0
        while True:
            if self._paused:  # paused since the last tick: park (see `pause`)
                return
            self._tick()
            # Next tick on the fixed grid start + k*interval; skip ticks already missed.
            elapsed = time.monotonic() - start
            tick = max(tick + 1, int(elapsed / self.interval) + 1)
            if self._wake.wait(max(0.0, start + tick * self.interval - time.monotonic())):
                return
