"""A feed hands the engine, each cycle, what is new about each run it watches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from flightlog.alerts.delta import Cycle, Needs
from flightlog.models import RunInfo

__all__ = ["Feed", "NeedsFor"]

NeedsFor = Callable[[RunInfo], Needs]


class Feed(Protocol):
    def poll(self, now: float, needs_for: NeedsFor, wanted: Needs | None = None) -> Cycle:
        """What to evaluate now: every running run (new points or not), the runs that ended
        since the last poll (``finished=True``, once), and the new points of the series
        ``wanted`` (all of them when None)."""
        ...

    def close(self) -> None: ...
