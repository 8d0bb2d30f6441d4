"""Which events of a decoded log chunk pass a :class:`~flightlog.models.LogQuery`.

Apart from the mixins because two of them filter chunks alike: a run's logs (``events.py``) and
its live stream (``streams.py``). The SQL narrows the chunks (by time, level, attempt); this
reads each chunk's events, and fills in the rank of an event that names none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flightlog.models import LogEvent, LogQuery

if TYPE_CHECKING:
    from flightlog.query.regex import GrepPattern

__all__ = ["event_time", "matching"]


def event_time(event: LogEvent) -> float:
    return event.time


def matching(batch: Any, query: LogQuery, pattern: GrepPattern | None, rank: int | None = None) -> list[LogEvent]:
    """The chunk's events that pass ``query``; ``rank``: its writer's rank, the rank of an event
    that names none (everything a rank's writer records belongs to that rank)."""
    out = []
    cols = batch
    if rank is not None:
        cols.rank = [rank if r is None else r for r in cols.rank]
    for i in range(len(cols.time)):
        if query.min_level is not None and cols.level[i] < query.min_level:
            continue
        t = cols.time[i]
        if query.since is not None and t < query.since:
            continue
        if query.until is not None and t > query.until:
            continue
        if query.streams is not None and cols.stream[i] not in query.streams:
            continue
        if query.component is not None and cols.component[i] != query.component:
            continue
        if query.attempt is not None and cols.attempt[i] != query.attempt:
            continue
        if query.stage is not None and cols.stage[i] != query.stage:
            continue
        if query.rank is not None and cols.rank[i] != query.rank:
            continue
        if pattern is not None and not pattern.search(cols.message[i]):
            continue
        out.append(
            LogEvent(
                t,
                cols.stream[i],
                cols.level[i],
                cols.message[i],
                cols.component[i],
                cols.fields[i],
                cols.rank[i],
                cols.attempt[i],
                cols.stage[i],
            )
        )
    return out
