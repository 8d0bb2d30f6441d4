"""Changes since a cursor: what a live reader (the alert feed) asks a store each cycle.

Why a cursor of row ids: chunk, sample and log rows get increasing ids in commit order (one
appending writer at a time, in SQLite and in PostgreSQL alike, see their connection modules),
so ``after < id <= cursor`` (the cursor read first) is exactly what was committed between two
reads. A cycle costs in proportion to what is new, never to a run's history. Every SQL store
implements :class:`ChangeFeedStore`; the alert feed (``alerts/feeds/store.py``) reads nothing
else, so it never touches a backend's tables itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from flightlog.models import RunInfo

__all__ = ["FEED_TABLES", "Changes", "ChangeFeedStore", "Cursor"]

#: the append-only tables a cursor covers
FEED_TABLES = ("metric_chunks", "resource_samples", "log_chunks")
Cursor = Mapping[str, int]


@dataclass
class Changes:
    cursor: dict[str, int]
    """The newest row id of each table when read: pass it as ``after`` next time."""
    metric_chunks: list[tuple[str, str, bytes, bytes, bytes]] = field(default_factory=list)
    """(run id, metric, little-endian steps, times, values) in commit order."""
    samples: list[tuple[str, int, str]] = field(default_factory=list)
    """(run id, sample id, the sample's JSON)."""
    last_log: dict[str, float] = field(default_factory=dict)
    """Per run, the time of its newest log event among the new chunks."""
    fresh: dict[str, float] = field(default_factory=dict)
    """Per run, the time of its newest resource sample among the new ones."""


class ChangeFeedStore(Protocol):
    def change_cursor(self) -> dict[str, int]:
        """The newest row id of each of :data:`FEED_TABLES` (0 when empty)."""
        ...

    def change_horizon(self) -> dict[str, int]:
        """A cursor that :meth:`change_cursor` reaches only once every row committed by now is
        in a window read up to it. SQLite: the cursor itself (ids commit in order). PostgreSQL:
        the next transaction id — a transaction that committed while an older one still runs
        stays above the cursor until the older one ends, though the runs table shows its work."""
        ...

    def change_position(self) -> str:
        """An opaque text that differs whenever a run or a feed table changed since it was read."""
        ...

    def changes(
        self,
        after: Cursor,
        upto: Cursor | None = None,
        *,
        run_id: str | None = None,
        metrics: bool = True,
        samples: bool = True,
        activity: bool = True,
        samples_since: float | None = None,
    ) -> Changes:
        """Rows committed after ``after`` up to ``upto`` (default: now), of one run or of all;
        ``samples_since`` keeps only samples taken at or after that time."""
        ...

    def feed_runs(self, *, run_id: str | None = None, updated_since: float | None = None) -> list[RunInfo]:
        """The run ``run_id``, or every run still active or updated since ``updated_since``
        (columns and timeline, where heartbeats live; no params, tags or metrics)."""
        ...

    def run_labels(self, run_ids: Sequence[str]) -> dict[str, tuple[dict[str, Any], dict[str, str]]]:
        """(params, tags) of each run."""
        ...
