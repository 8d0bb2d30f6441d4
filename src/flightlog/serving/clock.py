"""The serving evidence's clock: how a request's ``perf_counter`` end becomes a wall time, and
what time it is now (which minutes are over, when a sampling window turns).

Why a clock of its own and not ``time.time()`` at each request: the request path reads only
``perf_counter`` (the cheapest clock, and the one latencies are measured with); the background
thread turns it into wall time once per request, with one offset taken at start. Why injectable:
a rollout over ten minutes, a quiet minute, a sampling window turning — a test (or a replay)
runs them on a clock that goes faster than the wall, never waiting out real minutes:

    serving.attach(..., clock=serving.clock.FastClock(speed=60))   # a minute per second

Latencies are still measured in real time; only the minute a request falls in moves faster.
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "WallClock", "FastClock"]


class Clock(Protocol):
    """Maps ``time.perf_counter()`` readings to wall time (epoch seconds)."""

    def wall(self, perf: float) -> float:
        """The wall time of a ``perf_counter`` reading."""
        ...

    def now(self) -> float:
        """The wall time now."""
        ...


class WallClock:
    """The real clock: one offset between ``perf_counter`` and ``time.time()``, taken at start."""

    def __init__(self) -> None:
        self.offset = time.time() - time.perf_counter()

    def wall(self, perf: float) -> float:
        return perf + self.offset

    def now(self) -> float:
        return time.time()


class FastClock:
    """A clock ``speed`` times faster than the wall, starting at ``start`` (default: now).

    ``FastClock(speed=60)`` puts a request made 10 s after start 10 minutes later in the
    replica's minutes; for tests and replays of traffic, never for a production server."""

    def __init__(self, speed: float, start: float | None = None) -> None:
        if not speed > 0:
            raise ValueError(f"FastClock(speed={speed!r}): the speed must be a positive factor, such as 60")
        self.speed = float(speed)
        self.start = time.time() if start is None else float(start)
        self._perf0 = time.perf_counter()

    def wall(self, perf: float) -> float:
        return self.start + (perf - self._perf0) * self.speed

    def now(self) -> float:
        return self.wall(time.perf_counter())
