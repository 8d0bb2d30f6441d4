"""The cause of a run that ended badly, in one taxonomy word, for every row of a runs listing.

Why not the diagnosis: a listing page holds up to a thousand runs and a diagnosis reads each
run's metrics, logs and resources. The cause here uses only what the runs row already holds:
the category the runner stored in the failure summary when the run ended (``flightlog run``
classifies every failed attempt), else its end reason, else the fast classifier
(:func:`~flightlog.diagnose.classify.classify_failure`, pure and a few milliseconds) on the
stored exception, traceback and last lines. ``flightlog diagnose RUN`` remains the answer with
evidence; this is its headline.
"""

from __future__ import annotations

import functools
from typing import Any

from flightlog.diagnose.classify import classify_failure
from flightlog.models import RunInfo
from flightlog.statuses import FAILED_STATUSES

__all__ = ["CAUSED_STATUSES", "run_cause"]

#: the statuses a cause is given for (a stopped run was stopped on purpose)
CAUSED_STATUSES = frozenset(FAILED_STATUSES)
CACHE_SIZE = 1024
"""Failures whose cause is remembered (a traceback is stored up to 20,000 characters: 20 MB at most)."""
LAST_LINES = 5
"""How many of the stored last lines the classifier reads when the failure has no traceback."""
_BY_END_REASON = {"oom_killed": "oom_killed", "timeout": "timeout", "signal": "killed_by_signal"}


def run_cause(info: RunInfo) -> str | None:
    """The run's cause category, or None for a run that did not fail or that nothing explains."""
    if info.status not in CAUSED_STATUSES:
        return None
    failure: dict[str, Any] = info.failure if isinstance(info.failure, dict) else {}
    stored = failure.get("category")
    if isinstance(stored, str) and stored and stored != "none":
        return stored
    if info.end_reason in _BY_END_REASON:
        return _BY_END_REASON[info.end_reason]
    traceback = failure.get("traceback")
    traceback = traceback if isinstance(traceback, str) and traceback else None
    lines = failure.get("last_lines")
    # the traceback says it all when there is one; else the last few lines (each line costs
    # the classifier its pattern tables: twenty long lines are 15 ms, a traceback 0.4 ms)
    last_lines = (
        []
        if traceback is not None or not isinstance(lines, list)
        else [line for line in lines[-LAST_LINES:] if isinstance(line, str)]
    )
    exception, message = failure.get("exception"), failure.get("message")
    if traceback is None and isinstance(exception, str) and exception:  # a summary without its text
        last_lines.append(f"{exception}: {message}" if isinstance(message, str) and message else exception)
    if traceback is None and not last_lines and info.exit_code in (None, 0) and info.signal is None:
        return None
    exit_code = info.exit_code
    if exit_code is None and info.signal is None and (traceback is not None or exception):
        exit_code = 1  # an uncaught exception the SDK recorded: the interpreter exits 1 on it
    return _classified(exit_code, info.signal, traceback, tuple(last_lines))


@functools.lru_cache(maxsize=CACHE_SIZE)
def _classified(
    exit_code: int | None, signal: int | None, traceback: str | None, last_lines: tuple[str, ...]
) -> str | None:
    """The fast classifier, remembered by what it read: a finished run's failure does not change,
    and the UI reads the same rows again every few seconds."""
    category, _ = classify_failure(
        exit_code=exit_code,
        signal=signal,
        timed_out=False,
        oom_killed=False,
        traceback_text=traceback,
        last_lines=list(last_lines),
    )
    return None if category == "none" else category
