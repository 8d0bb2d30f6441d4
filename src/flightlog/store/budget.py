"""The time budget of one search, so that an expensive query is stopped with a clear error
instead of holding the store (and every reader waiting on it) for minutes.

Every backend honours it the same way: its database stops the statement once the deadline
passes (SQLite: a progress handler), and Python-side work (decoding log chunks, grep) checks
the deadline as it goes. The budget is FLIGHTLOG_QUERY_TIMEOUT, or the server's --query-timeout.
"""

from __future__ import annotations

import os
import time

from flightlog.errors import InvalidInput, QueryTimeout

__all__ = ["DEFAULT_QUERY_TIMEOUT", "Deadline", "query_timeout_from_env"]

DEFAULT_QUERY_TIMEOUT = 10.0
"""Seconds one search (runs by filter, logs by grep) may take before it is stopped."""


def query_timeout_from_env() -> float | None:
    """FLIGHTLOG_QUERY_TIMEOUT (seconds; 0 turns the budget off), else the default."""
    raw = os.environ.get("FLIGHTLOG_QUERY_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_QUERY_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise InvalidInput(f"FLIGHTLOG_QUERY_TIMEOUT={raw!r} is not a number of seconds (0 turns the budget off)")
    return seconds or None


class Deadline:
    """The time budget of one query, for the Python side of it (decoding, grep) to check."""

    def __init__(self, budget: float | None) -> None:
        self.budget = budget
        self.at = None if budget is None else time.monotonic() + budget

    def passed(self) -> bool:
        return self.at is not None and time.monotonic() > self.at

    def check(self) -> None:
        if self.passed():
            raise self.error()

    def error(self) -> QueryTimeout:
        return QueryTimeout(
            f"the query ran past its time budget of {self.budget:g} s and was stopped: narrow it (a project, "
            "a shorter time range, a more selective filter or grep), or raise the budget "
            "(FLIGHTLOG_QUERY_TIMEOUT, or `flightlog server --query-timeout`)",
            details={"budget_s": self.budget},
        )
