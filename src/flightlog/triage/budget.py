"""What one triage report may cost a server, and what it remembers between reports.

A writer controls the failures a reader's ``GET /triage`` reads: 2,000 crafted failures once
cost 64 s of server CPU (issue 31, item 8). Three bounds keep a report's work in proportion to
what is new, whoever wrote the failures:

* **text**: the classifier reads a failure through its pattern tables, at milliseconds per
  thousand characters; it is given each line cut at :data:`CLASSIFY_LINE` characters and the
  traceback's last :data:`CLASSIFY_TEXT` (where the exception is) — what says what went wrong
  is at the start of a line and at the end of a traceback;
* **count**: a report classifies at most :data:`CLASSIFY_BUDGET` failures it has not seen
  before (the rest show as ``unclassified`` until a next report) and reads at most
  :data:`MAX_FAILURES` failures, the newest;
* **memory**: categories are remembered by signature and each run's signature parts by its
  id and last change across reports (:class:`LruCache`: a failure is parsed and classified
  once per server process), and a whole report by the store's change position
  (:class:`ReportCache`): asking again while nothing changed costs one query.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Generic, TypeVar

from flightlog.diagnose.cause import LAST_LINES, run_cause
from flightlog.models import RunInfo

__all__ = [
    "CLASSIFY_BUDGET",
    "CLASSIFY_LINE",
    "CLASSIFY_TEXT",
    "MAX_FAILURES",
    "LruCache",
    "ReportCache",
    "bounded_cause",
]

CLASSIFY_LINE = 400
"""Characters of one line (a message, a last line, a traceback's line) the classifier reads."""
CLASSIFY_TEXT = 8000
"""Characters of a traceback the classifier reads: its end, where the exception is."""
CLASSIFY_BUDGET = 300
"""Failures one report classifies that no earlier report did (a few milliseconds each)."""
MAX_FAILURES = 20_000
"""Failures one report reads, the newest: a window with more says ``truncated``."""

K = TypeVar("K")
V = TypeVar("V")


def _lines(text: str) -> str:
    return "\n".join(line[:CLASSIFY_LINE] for line in text[-CLASSIFY_TEXT:].splitlines())


def bounded_cause(info: RunInfo) -> str | None:
    """:func:`flightlog.diagnose.cause.run_cause` over the failure's text cut to the bounds above."""
    failure = info.failure
    if not isinstance(failure, dict):
        return run_cause(info)
    trimmed = dict(failure)
    if isinstance(failure.get("traceback"), str):
        trimmed["traceback"] = _lines(failure["traceback"])
    if isinstance(failure.get("message"), str):
        trimmed["message"] = failure["message"][:CLASSIFY_LINE]
    lines = failure.get("last_lines")
    if isinstance(lines, list):
        trimmed["last_lines"] = [x[:CLASSIFY_LINE] if isinstance(x, str) else x for x in lines[-LAST_LINES:]]
    return run_cause(dataclasses.replace(info, failure=trimmed))


class LruCache(MutableMapping[K, V], Generic[K, V]):
    """A mapping that keeps its ``size`` most recently used entries, safe across threads (a
    server answers reports in several worker threads at once)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def __getitem__(self, key: K) -> V:
        with self._lock:
            value = self._items[key]
            self._items.move_to_end(key)
            return value

    def __setitem__(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __delitem__(self, key: K) -> None:
        with self._lock:
            del self._items[key]

    def __iter__(self) -> Iterator[K]:
        with self._lock:
            return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)


class ReportCache:
    """Reports by what was asked and the store's change position: a report is made again only
    when the store changed since, or when the one remembered was made ``max_age`` seconds or
    more before the question (its window, "the last 7 days", moved on). One report is made at
    a time: readers asking at once wait for it in their worker threads (never on the event loop)
    rather than each spending the server's CPU on it.

    The age is counted from when the remembered report was asked for, not by clock minutes: a
    report that took 50 s to make on a busy server still answers the same question asked the
    moment it came out."""

    def __init__(self, size: int = 32, *, max_age: float = 60.0) -> None:
        self._reports: LruCache[tuple[Any, ...], tuple[float, dict[str, Any]]] = LruCache(size)
        self._making = threading.Lock()
        self.max_age = max_age

    def get(
        self, key: tuple[Any, ...], position: str, make: Callable[[], dict[str, Any]], *, now: float
    ) -> dict[str, Any]:
        """The report for ``key`` at ``position`` asked at ``now``; made by ``make`` when none
        young enough is remembered."""
        full = (*key, position)
        found = self._fresh(full, now)
        if found is not None:
            return found
        with self._making:
            found = self._fresh(full, now)  # made by the reader this one waited for
            if found is None:
                found = make()
                self._reports[full] = (now, found)
        return found

    def _fresh(self, key: tuple[Any, ...], now: float) -> dict[str, Any] | None:
        entry = self._reports.get(key)
        if entry is None or now - entry[0] >= self.max_age:
            return None
        return entry[1]
